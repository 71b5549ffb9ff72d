/*
 * oci_spec: reading an image archive's JSON documents (OCI image-spec
 * "image-layout.md", "image-index.md", "manifest.md", "config.md", and
 * `docker save`'s manifest.json): which blobs make the image, in which
 * order, with which digests, and the config's runtime defaults.
 *
 * Contract: pure (jansson only). Every document is hostile: sizes are
 * bounded by the caller (OCI_JSON_MAX), counts here (OCI_LAYERS_MAX,
 * OCI_ENV_MAX, OCI_ARGV_MAX), every string checked for type and length.
 * Blob paths that leave here are cleaned (oci_path_clean) and relative
 * to the archive's root. Errors say which document and which field.
 */
#ifndef KILN_OCI_SPEC_H
#define KILN_OCI_SPEC_H

#include <stddef.h>

#include <jansson.h>

#include "api/image-import/oci_path.h"
#include "lib/base/err.h"
#include "lib/digest/digest.h"

#define OCI_JSON_MAX (4u << 20) /* largest index/manifest/config document */
#define OCI_LAYERS_MAX 256
#define OCI_ENV_MAX 1024
#define OCI_ARGV_MAX 1024
#define OCI_STRING_MAX 65536
#define OCI_CONFIG_RECORD_MAX (256u << 10) /* kiln's record of a config, as compact JSON */

struct oci_blob {
	char path[OCI_PATH_MAX + 1]; /* in the archive */
	char digest[DIGEST_STR_LEN]; /* "": not known (docker save's layer.tar) */
};

struct oci_image {
	struct oci_blob config;
	struct oci_blob layers[OCI_LAYERS_MAX];
	size_t nlayers;
};

/* Whether s is "sha256:" and 64 lowercase hex digits. */
bool oci_digest_valid(const char *s);

#define OCI_REF_MAX 255 /* longest tag asked for (image-spec: a ref.name is short) */

/*
 * index.json of an OCI layout: the image manifest's blob (its path
 * "blobs/sha256/HEX" and digest). With ref, only the manifests tagged ref
 * (annotation org.opencontainers.image.ref.name) count; without, an index
 * whose manifests carry several tags is refused, listing them (umoci and
 * skopeo keep one tag per entry, no platform). Of what counts, the only
 * one, else the one for linux/amd64. A nested index, no manifest, no
 * match, or several with none for linux/amd64 is -EINVAL with e.
 */
int oci_index_parse(const char *buf, size_t n, const char *ref, struct oci_blob *manifest,
		    struct err *e);

/* An OCI image manifest: config and layers, in order. */
int oci_manifest_parse(const char *buf, size_t n, struct oci_image *im, struct err *e);

/*
 * docker save's manifest.json: the first (only) image's Config and Layers.
 * A path of the form blobs/sha256/HEX or HEX.json carries its digest
 * (checked by the caller); others ("ID/layer.tar") have none.
 */
int oci_docker_manifest_parse(const char *buf, size_t n, struct oci_image *im, struct err *e);

/*
 * An image config: *out (new reference) is kiln's record of its runtime
 * defaults, {"env": {NAME: VALUE}, "working_dir": S, "user": S, "cmd":
 * [..], "entrypoint": [..]}, each present only when the config has it
 * (config.Env entries are "NAME=VALUE"; NAME is non-empty, printable and
 * has no '='). -EINVAL with e for a wrong type, an over-long value or a
 * record over OCI_CONFIG_RECORD_MAX bytes as compact JSON.
 */
int oci_config_parse(const char *buf, size_t n, json_t **out, struct err *e);

#endif
