# One image for the controller and the workers (helm/hone runs both from it). Build:
#   docker build -t hone:0.1.0 .
# The build stage compiles Hone (Release, CUDA backend) on the CUDA toolkit image; the runtime stage
# holds the five programs, the shared libraries they load (the build stage lists their packages)
# and the CUDA runtime, and runs as uid 10001. The first argument picks the program:
#   docker run --rm hone:0.1.0 controller --help      (or worker, train, pack, hone)
ARG CUDA_VERSION=13.0.0
ARG UBUNTU_VERSION=24.04

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The -dev packages scripts/bootstrap.sh installs for the build (Ubuntu names: libjpeg-turbo8-dev
# is Debian's libjpeg62-turbo-dev); none of the test-only ones.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libuv1-dev libsqlite3-dev libjansson-dev libyaml-dev libcurl4-openssl-dev libssl-dev \
      libhttp-parser-dev libopenblas-dev zlib1g-dev libjpeg-turbo8-dev libspng-dev \
      libprotobuf-c-dev protobuf-c-compiler \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY common common
COPY search search
COPY spec spec
COPY data data
COPY kernels kernels
COPY train train
COPY api api
COPY controller controller
COPY worker worker
COPY cli cli
COPY schemas schemas
COPY web web
# CUDA_ARCHS: the GPUs the kernels are compiled for (80 A100, 89 L4/L40, 90 H100/H200).
ARG CUDA_ARCHS="80;89;90"
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHONE_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS}" | tee /tmp/cmake.log \
 && grep -q "hone: CUDA backend ON" /tmp/cmake.log \
 && cmake --build build -j"$(nproc)" --target hone-controller hone-worker hone-train hone-pack hone \
 && mkdir -p /out/bin \
 && cp build/controller/hone-controller build/worker/hone-worker build/train/hone-train \
       build/data/hone-pack build/cli/hone /out/bin/
# The Ubuntu packages of the shared libraries the programs load (dpkg knows each file by its
# /usr/lib or its /lib path), less the CUDA ones (the runtime base image has those) and libc's.
RUN set -e; for lib in $(for b in /out/bin/*; do ldd "$b"; done | awk '/=> \//{print $3}' | sort -u); do \
      real=$(readlink -f "$lib"); \
      dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null \
        || dpkg -S "$lib" 2>/dev/null || { echo "no package holds $lib" >&2; exit 1; }; \
    done | cut -d: -f1 | sort -u \
      | grep -Ev '^(libc6|libgcc-s1|libstdc\+\+6|cuda-|libcublas|libnccl|libcudnn)' \
      > /out/runtime-packages.txt \
 && cat /out/runtime-packages.txt

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION} AS runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates $(cat /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --gid 10001 hone \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/hone \
      --shell /usr/sbin/nologin hone \
 && mkdir -p /var/lib/hone /var/lib/hone-worker /var/cache/hone \
 && chown 10001:10001 /var/lib/hone /var/lib/hone-worker /var/cache/hone
COPY --from=build /out/bin/ /usr/local/bin/
COPY scripts/container-entrypoint.sh /usr/local/bin/container-entrypoint.sh
USER 10001:10001
WORKDIR /var/lib/hone
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/container-entrypoint.sh"]
CMD ["--help"]
