# shellcheck shell=bash
# tests/gpu/debs.sh, sourced by tests/gpu/run.sh and bench/regress.sh: on a machine without the
# system libraries the whole tree's configure wants (yaml, uv, jansson, sqlite, openblas ...), the
# Debian .debs in $DEBS (default ./.debs) are unpacked into the private prefix $PREFIX (default
# /tmp/hone-debs) and the compiler, linker, pkg-config and CMake are pointed there. Sets CMAKE_EXTRA
# (an array of CMake options) and exports PATH, LD_LIBRARY_PATH, LIBRARY_PATH, PKG_CONFIG_PATH and
# CMAKE_PREFIX_PATH; does nothing on a machine that has the libraries.
DEBS=${DEBS:-${HONE_DEBS:-$(pwd)/.debs}}
PREFIX=${PREFIX:-/tmp/hone-debs}
CMAKE_EXTRA=()
if { ! command -v pkg-config >/dev/null || [ ! -e /usr/include/yaml.h ] || [ ! -e /usr/include/zlib.h ] ||
     [ ! -e /usr/include/uv.h ] || ! ls /usr/include/*/cblas.h /usr/include/cblas.h >/dev/null 2>&1; } &&
   [ -d "$DEBS" ]; then
  echo "debs.sh: unpacking $(ls "$DEBS"/*.deb | wc -l) .debs into $PREFIX"
  mkdir -p $PREFIX
  for f in "$DEBS"/*.deb; do dpkg -x "$f" $PREFIX; done
  for pc in $PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc $PREFIX/usr/share/pkgconfig/*.pc; do
    [ -e "$pc" ] && sed -i "s#^prefix=/usr\$#prefix=$PREFIX/usr#" "$pc"
  done
  ML=$PREFIX/usr/lib/x86_64-linux-gnu
  # A -dev package's libX.so points at libX.so.N of its runtime package: where that was not carried,
  # point it at the image's own copy, so the linker takes the shared library and not libX.a.
  for l in "$ML"/*.so; do
    t=$(readlink "$l") || continue
    [ -e "$ML/$t" ] || [ ! -e "/usr/lib/x86_64-linux-gnu/$t" ] || ln -sf "/usr/lib/x86_64-linux-gnu/$t" "$ML/$t"
  done
  export PATH=$PREFIX/usr/bin:$PATH
  export LD_LIBRARY_PATH=$ML:$ML/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LIBRARY_PATH=$ML:$ML/openblas-pthread${LIBRARY_PATH:+:$LIBRARY_PATH}
  export PKG_CONFIG_PATH=$ML/pkgconfig:$PREFIX/usr/share/pkgconfig
  export CMAKE_PREFIX_PATH=$PREFIX/usr
  CMAKE_EXTRA+=(-DHONE_OPENBLAS_LIB=$ML/openblas-pthread/libopenblas.so
                -DHONE_CBLAS_INCLUDE=$PREFIX/usr/include/x86_64-linux-gnu/openblas-pthread
                -DCMAKE_C_FLAGS=-I$PREFIX/usr/include)
fi
