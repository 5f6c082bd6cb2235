# Cross build for 64-bit ARM Linux (aarch64) on a Debian amd64 host: Debian's cross compiler
# (g++-aarch64-linux-gnu) and the arm64 libraries installed through multiarch
# (`dpkg --add-architecture arm64`, then `apt-get install libhwy-dev:arm64 ...`), which live in
# /usr/lib/aarch64-linux-gnu beside the host's own. scripts/test_arm64.sh installs them, builds with
#   cmake -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# and runs the result under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: the target's libraries share the host's root (/usr/lib/aarch64-linux-gnu,
# /usr/include/aarch64-linux-gnu); the cross compiler already searches them. Packages and libraries
# are looked up under the root only, and CMake's find_library picks the aarch64 directory through
# CMAKE_LIBRARY_ARCHITECTURE; programs (ninja, git) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (PCRE2, Highway) reads the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# try_run and the test discovery run aarch64 programs under qemu-user. No -L/QEMU_LD_PREFIX: the
# dynamic loader and libc are multiarch's libc6:arm64 (/lib/ld-linux-aarch64.so.1), the same glibc
# as the other arm64 libraries; the cross toolchain's loader (/usr/aarch64-linux-gnu) would be
# mixed with multiarch's libc.so.6, and OpenMP's threads then hang.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
