# syntax=docker/dockerfile:1
# faultline container image: multi-stage on Debian 12 (bookworm-slim).
#
#   docker build -t faultline:dev .
#   docker run --rm -p 9464:9464 -v /var/log/pods:/var/log/pods:ro faultline:dev
#
# Build stage: the same apt packages as scripts/install-deps.sh (the script itself runs here),
# then the same CMake build and install as a developer's, prefix /usr; the installed rules
# must load (`scan` shares the loader with `run`).
# Runtime stage: only the shared libraries the binary links (computed in the build stage by
# deploy/docker/runtime-packages.sh from ldd + dpkg -S), the binary, the rules, a non-root user.
# Not built on the development machines (they have no container engine); see deploy/README.md.

ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${DEBIAN_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive
# Build dependencies only (install-deps.sh without --test reads scripts/packages-build.txt).
COPY scripts/install-deps.sh scripts/packages-build.txt /tmp/deps/
RUN bash /tmp/deps/install-deps.sh \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
          -DFAULTLINE_BUILD_TESTS=OFF -DFAULTLINE_BUILD_BENCH=OFF \
 && cmake --build /build -j"$(nproc)" \
 && DESTDIR=/out cmake --install /build \
 && /out/usr/bin/faultline version \
 && /out/usr/bin/faultline scan --rules /out/usr/share/faultline/rules < /dev/null \
 && deploy/docker/runtime-packages.sh /out/usr/bin/faultline > /out/runtime-packages.txt \
 && cat /out/runtime-packages.txt

FROM ${DEBIAN_IMAGE} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
# ca-certificates: TLS to webhook receivers.
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --system --gid 65532 faultline \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /var/lib/faultline \
            --shell /usr/sbin/nologin faultline \
 && install -d -o 65532 -g 65532 -m 0750 /var/lib/faultline \
 && install -d -m 0755 /etc/faultline \
 && printf '%s\n' '# Built-in defaults (Kubernetes pod logs, /dev/kmsg if readable, the shipped rules),' \
                  '# listening on every interface as a container must. The Helm chart mounts its own.' \
                  'listen: 0.0.0.0:9464' > /etc/faultline/config.yaml
COPY --from=build /out/usr/bin/faultline /usr/bin/faultline
COPY --from=build /out/usr/share/faultline/ /usr/share/faultline/
# Numeric, so Kubernetes can check runAsNonRoot. The node agent overrides it with uid 0 (the CRI
# log files are root's, mode 0640) and drops every capability.
USER 65532:65532
ENV STATE_DIRECTORY=/var/lib/faultline
EXPOSE 9464
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/faultline"]
CMD ["run", "--config", "/etc/faultline/config.yaml"]
