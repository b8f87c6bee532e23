# A harness bundle: a data-only image holding BUNDLE_DIR (runtime + harness + bin/ wrappers). A container
# created from it (never started) with a volume at BUNDLE_DIR lends the tree to instance containers through
# volumes_from. No VOLUME here: every build step after it would copy the tree into a throwaway volume.
ARG RUNTIME_IMAGE
FROM ${RUNTIME_IMAGE} AS build
# Marks this stage's images so the build can drop them once the bundle is made.
ARG STAGE_LABEL
LABEL clawswe.bundle=${STAGE_LABEL}
ARG PIP_INDEX_URL
ARG RUNTIME
ARG BUNDLE_DIR
ARG PACKAGES
ARG ENTRY_POINTS
COPY . /clawswe/bundle/
RUN sh /clawswe/bundle/install-${RUNTIME}.sh

FROM scratch
ARG BUNDLE_DIR
ARG BUNDLE_LABEL
ARG LOCK_DIGEST=none
COPY --from=build ${BUNDLE_DIR} ${BUNDLE_DIR}
LABEL clawswe.bundle=${BUNDLE_LABEL} clawswe.bundle.path=${BUNDLE_DIR} clawswe.bundle.lock=${LOCK_DIGEST}
# Never run; `docker create` only needs a command to exist.
CMD ["/bundle-is-data-only"]
