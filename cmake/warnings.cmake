# serene_warnings: an interface target every Serene target links to.
add_library(serene_warnings INTERFACE)
target_compile_options(serene_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
if(SERENE_WERROR)
  target_compile_options(serene_warnings INTERFACE -Werror)
endif()
