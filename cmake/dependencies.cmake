# Every dependency comes from a Debian package (scripts/install-deps.sh).
# Nothing is vendored or downloaded at build time.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(ZLIB REQUIRED)

# Control plane: gRPC runtime API, Lua 5.4 policies, HTTP metrics.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
pkg_check_modules(LUA REQUIRED IMPORTED_TARGET lua5.4)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

# Gloo: the host-collective baseline (collective/), with or without torch.
find_package(Gloo REQUIRED)
if(SERENE_WITH_TORCH)
  find_package(Torch REQUIRED)
endif()
