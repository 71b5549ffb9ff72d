/*
 * fuzz_oci_spec: the image archive documents kiln-image-import reads from
 * a client's archive (api/image-import/oci_spec.c): index.json, an image
 * manifest, docker save's manifest.json, an image config.
 *
 * Input: selector byte (% 4: index, manifest, docker manifest, config;
 * an index with bit 2 set is read with the ref "v1"), then the document.
 * Invariants: no crash or leak; a failure says why; what is accepted is
 * in bounds: digests valid, blob paths cleaned (relative, no ".."), layer
 * count within OCI_LAYERS_MAX, config env values strings with names
 * free of '='.
 */
#include <errno.h>

#include "api/image-import/oci_spec.h"
#include "fuzz.h"

static void check_path(const char *p)
{
	FUZZ_ASSERT(p[0] && p[0] != '/' && strlen(p) <= OCI_PATH_MAX);
	FUZZ_ASSERT(strcmp(p, "..") && strncmp(p, "../", 3) && !strstr(p, "/../") &&
		    (strlen(p) < 3 || strcmp(p + strlen(p) - 3, "/..")));
}

static void check_image(const struct oci_image *im, bool digests)
{
	FUZZ_ASSERT(im->nlayers <= OCI_LAYERS_MAX);
	check_path(im->config.path);
	FUZZ_ASSERT(!im->config.digest[0] || oci_digest_valid(im->config.digest));
	FUZZ_ASSERT(!digests || oci_digest_valid(im->config.digest));
	for (size_t i = 0; i < im->nlayers; i++) {
		check_path(im->layers[i].path);
		FUZZ_ASSERT(!im->layers[i].digest[0] || oci_digest_valid(im->layers[i].digest));
		FUZZ_ASSERT(!digests || oci_digest_valid(im->layers[i].digest));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct oci_image im;
	const char *doc = (const char *)data + 1;
	size_t n = size ? size - 1 : 0;
	struct oci_blob b;
	struct err e = { { 0 } };
	json_t *c = NULL, *env;
	const char *k;
	json_t *v;
	int r;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
		r = oci_index_parse(doc, n, data[0] & 4 ? "v1" : NULL, &b, &e);
		if (!r) {
			FUZZ_ASSERT(oci_digest_valid(b.digest));
			check_path(b.path);
		}
		break;
	case 1:
		r = oci_manifest_parse(doc, n, &im, &e);
		if (!r)
			check_image(&im, true);
		break;
	case 2:
		r = oci_docker_manifest_parse(doc, n, &im, &e);
		if (!r)
			check_image(&im, false);
		break;
	default:
		r = oci_config_parse(doc, n, &c, &e);
		FUZZ_ASSERT(!r == !!c);
		env = json_object_get(c, "env");
		json_object_foreach(env, k, v)
		{
			FUZZ_ASSERT(*k && !strchr(k, '=') && json_is_string(v));
		}
		json_decref(c);
		break;
	}
	FUZZ_ASSERT(!r || (r == -EINVAL && e.msg[0]) || r == -ENOMEM);
	return 0;
}
