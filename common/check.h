// SERENE_CHECK: invariant checks that abort with file:line and a message.
// Use only for programming errors, never for bad input (bad input gets a
// Status or is dropped and counted).
#pragma once

#include <cstdio>
#include <cstdlib>

#define SERENE_CHECK(cond, msg)                                                       \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__, __LINE__, #cond, \
                   msg);                                                              \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)
