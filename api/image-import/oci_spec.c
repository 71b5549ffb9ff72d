/* Image archive JSON documents; see oci_spec.h. */
#include "api/image-import/oci_spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/json.h"
#include "lib/base/json_text.h"

#define MT_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
/* image-spec annotations.md: the tag a layout gives a manifest (umoci, skopeo, docker save) */
#define OCI_REF_KEY "org.opencontainers.image.ref.name"

bool oci_digest_valid(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0)
		return false;
	for (int i = 0; i < 64; i++) {
		char c = s[7 + i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return s[71] == '\0';
}

static json_t *load(const char *buf, size_t n, const char *what, struct err *e)
{
	json_error_t je;
	json_t *j;

	if (n > OCI_JSON_MAX) {
		err_set(e, EINVAL, "%s is larger than %u bytes", what, OCI_JSON_MAX);
		return NULL;
	}
	j = json_strict_loadb(buf, n, &je);
	if (!j)
		err_set(e, EINVAL, "%s is not JSON: %.200s (line %d)", what, je.text, je.line);
	return j;
}

/* A descriptor's digest into b (path blobs/sha256/HEX). */
static int descriptor(const json_t *d, const char *what, struct oci_blob *b, struct err *e)
{
	const char *dg = json_string_value(json_object_get(d, "digest"));

	if (!json_is_object(d) || !dg)
		return err_set(e, EINVAL, "%s: a descriptor needs a \"digest\" string", what);
	if (!oci_digest_valid(dg))
		return err_set(
			e, EINVAL,
			"%s: digest '%.80s' is not sha256:<64 hex digits> (other algorithms are not supported)",
			what, dg);
	snprintf(b->digest, sizeof(b->digest), "%s", dg);
	snprintf(b->path, sizeof(b->path), "blobs/sha256/%s", dg + 7);
	return 0;
}

static bool platform_is(const json_t *m, const char *os, const char *arch)
{
	const json_t *p = json_object_get(m, "platform");
	const char *o = json_string_value(json_object_get(p, "os"));
	const char *a = json_string_value(json_object_get(p, "architecture"));

	return o && a && strcmp(o, os) == 0 && strcmp(a, arch) == 0;
}

/* A manifest's tag: its org.opencontainers.image.ref.name, or NULL. */
static const char *ref_of(const json_t *m)
{
	return json_string_value(json_object_get(json_object_get(m, "annotations"), OCI_REF_KEY));
}

/* The distinct tags of ms, quoted and comma separated, into buf (the
 * first few: the list is for a message). */
static void refs_list(const json_t *ms, char *buf, size_t cap)
{
	size_t i, j, o = 0, shown = 0;
	const json_t *m;

	buf[0] = '\0';
	json_array_foreach(ms, i, m)
	{
		const char *r = ref_of(m);
		bool seen = false;

		for (j = 0; r && j < i && !seen; j++)
			seen = ref_of(json_array_get(ms, j)) &&
				strcmp(ref_of(json_array_get(ms, j)), r) == 0;
		if (!r || seen)
			continue;
		if (++shown > 8 || o + 100 >= cap) {
			snprintf(buf + o, cap - o, ", …");
			return;
		}
		o += (size_t)snprintf(buf + o, cap - o, "%s'%.80s'", o ? ", " : "", r);
	}
}

/* How many distinct tags ms carries (0, 1, or 2 for "several"). */
static int refs_count(const json_t *ms)
{
	const char *first = NULL, *r;
	const json_t *m;
	size_t i;

	json_array_foreach(ms, i, m)
	{
		if (!(r = ref_of(m)))
			continue;
		if (first && strcmp(first, r) != 0)
			return 2;
		first = r;
	}
	return first ? 1 : 0;
}

/* The manifest of ms to import: those tagged ref (all when ref is NULL),
 * the only one or the linux/amd64 one; NULL with e when none is. */
static const json_t *index_pick(const json_t *ms, const char *ref, struct err *e)
{
	const json_t *m, *first = NULL, *amd = NULL;
	char refs[1024];
	size_t i, n = 0;

	if (!ref && refs_count(ms) > 1) {
		refs_list(ms, refs, sizeof(refs));
		err_set(e, EINVAL,
			"index.json lists %zu manifests with the tags %s: choose one with ?ref=TAG (kiln image import --ref TAG)",
			json_array_size(ms), refs);
		return NULL;
	}
	json_array_foreach(ms, i, m)
	{
		if (ref && (!ref_of(m) || strcmp(ref_of(m), ref) != 0))
			continue;
		n++;
		first = first ? first : m;
		if (!amd && platform_is(m, "linux", "amd64"))
			amd = m;
	}
	if (n == 1 || amd)
		return n == 1 ? first : amd;
	refs_list(ms, refs, sizeof(refs));
	if (n == 0)
		err_set(e, EINVAL, "index.json has no manifest tagged '%.80s'%s%s%s", ref,
			refs[0] ? " (its tags: " : " (its manifests carry no tag)", refs,
			refs[0] ? "): give one of those as the ref" : "");
	else
		err_set(e, EINVAL,
			"index.json lists %zu manifests%s%.80s%s and none for linux/amd64: export one platform",
			n, ref ? " tagged '" : "", ref ? ref : "", ref ? "'" : "");
	return NULL;
}

int oci_index_parse(const char *buf, size_t n, const char *ref, struct oci_blob *manifest,
		    struct err *e)
{
	json_t *j = load(buf, n, "index.json", e), *ms;
	const json_t *pick;
	const char *mt;
	int r;

	if (!j)
		return -EINVAL;
	ms = json_object_get(j, "manifests");
	if (!json_is_array(ms) || json_array_size(ms) == 0) {
		r = err_set(e, EINVAL, "index.json: \"manifests\" must be a non-empty array");
		goto out;
	}
	if (!(pick = index_pick(ms, ref, e))) {
		r = -EINVAL;
		goto out;
	}
	mt = json_string_value(json_object_get(pick, "mediaType"));
	if (mt && (strcmp(mt, MT_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0)) {
		r = err_set(e, EINVAL,
			    "index.json points at another index (%.100s): nested indexes are not supported, export one platform",
			    mt);
		goto out;
	}
	r = descriptor(pick, "index.json manifests[]", manifest, e);
out:
	json_decref(j);
	return r;
}

/* How a document names a blob: an OCI descriptor, or docker save's path. */
typedef int blob_reader(const json_t *v, const char *what, struct oci_blob *b, struct err *e);

/* doc's array `key` of at most OCI_LAYERS_MAX layers, each read by `read`
 * and named what[i] in messages. */
static int read_layers(const json_t *doc_obj, const char *doc, const char *key, const char *what,
		       blob_reader *read, struct oci_image *im, struct err *e)
{
	const json_t *ls = json_object_get(doc_obj, key);
	int r = 0;

	if (!json_is_array(ls))
		return err_set(e, EINVAL, "%s has no \"%s\" array", doc, key);
	if (json_array_size(ls) > OCI_LAYERS_MAX)
		return err_set(e, EINVAL, "the image has %zu layers; at most %d are supported",
			       json_array_size(ls), OCI_LAYERS_MAX);
	for (size_t i = 0; !r && i < json_array_size(ls); i++) {
		char name[48];

		snprintf(name, sizeof(name), "%s[%zu]", what, i);
		r = read(json_array_get(ls, i), name, &im->layers[i], e);
		im->nlayers = i + 1;
	}
	return r;
}

int oci_manifest_parse(const char *buf, size_t n, struct oci_image *im, struct err *e)
{
	json_t *j = load(buf, n, "the image manifest", e);
	const char *mt;
	int r;

	if (!j)
		return -EINVAL;
	memset(im, 0, sizeof(*im));
	mt = json_string_value(json_object_get(j, "mediaType"));
	if (mt && (strcmp(mt, MT_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0)) {
		r = err_set(e, EINVAL,
			    "the manifest is an index (%.100s): nested indexes are not supported, export one platform",
			    mt);
		json_decref(j);
		return r;
	}
	r = descriptor(json_object_get(j, "config"), "manifest config", &im->config, e);
	if (!r)
		r = read_layers(j, "the image manifest", "layers", "manifest layers", descriptor,
				im, e);
	json_decref(j);
	return r;
}

/* docker save path: cleaned; digest from blobs/sha256/HEX or HEX.json. */
static int docker_path(const json_t *v, const char *what, struct oci_blob *b, struct err *e)
{
	const char *s = json_string_value(v);
	struct err pe;
	const char *base;

	if (!s)
		return err_set(e, EINVAL, "manifest.json: %s must be a string", what);
	if (oci_path_clean(s, b->path, &pe) < 0)
		return err_set(e, EINVAL, "manifest.json: %s '%.200s': %s", what, s, pe.msg);
	if (!b->path[0])
		return err_set(e, EINVAL, "manifest.json: %s '%.200s': names no file", what, s);
	b->digest[0] = '\0';
	base = strrchr(b->path, '/') ? strrchr(b->path, '/') + 1 : b->path;
	if (strncmp(b->path, "blobs/sha256/", 13) == 0 && strlen(b->path) == 13 + 64)
		snprintf(b->digest, sizeof(b->digest), "sha256:%s", b->path + 13);
	else if (strlen(base) == 64 + 5 && strcmp(base + 64, ".json") == 0)
		snprintf(b->digest, sizeof(b->digest), "sha256:%.64s", base);
	if (b->digest[0] && !oci_digest_valid(b->digest))
		b->digest[0] = '\0';
	return 0;
}

int oci_docker_manifest_parse(const char *buf, size_t n, struct oci_image *im, struct err *e)
{
	json_t *j = load(buf, n, "manifest.json", e), *first;
	int r;

	if (!j)
		return -EINVAL;
	memset(im, 0, sizeof(*im));
	first = json_array_get(j, 0);
	if (!json_is_array(j) || !json_is_object(first)) {
		json_decref(j);
		return err_set(e, EINVAL, "manifest.json must be an array of image objects");
	}
	if (json_array_size(j) > 1) {
		json_decref(j);
		return err_set(e, EINVAL,
			       "manifest.json holds %zu images: save one image per archive",
			       json_array_size(j));
	}
	r = docker_path(json_object_get(first, "Config"), "Config", &im->config, e);
	if (!r)
		r = read_layers(first, "manifest.json", "Layers", "Layers", docker_path, im, e);
	json_decref(j);
	return r;
}

/* A JSON array of strings (or null) into a new array; -EINVAL when wrong. */
static int argv_copy(const json_t *v, const char *what, json_t **out, struct err *e)
{
	size_t i;
	json_t *x;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > OCI_ARGV_MAX)
		return err_set(e, EINVAL, "image config: %s must be an array of at most %d strings",
			       what, OCI_ARGV_MAX);
	json_array_foreach(v, i, x)
	{
		if (!json_is_string(x) || json_string_length(x) > OCI_STRING_MAX)
			return err_set(e, EINVAL,
				       "image config: %s[%zu] must be a string of at most %d bytes",
				       what, i, OCI_STRING_MAX);
	}
	*out = json_deep_copy(v);
	return *out ? 0 : -ENOMEM;
}

static bool env_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static int env_copy(const json_t *v, json_t *out, struct err *e)
{
	json_t *env, *x;
	size_t i;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > OCI_ENV_MAX)
		return err_set(e, EINVAL,
			       "image config: Env must be an array of at most %d strings",
			       OCI_ENV_MAX);
	env = json_object();
	if (!env || json_object_set_new(out, "env", env))
		return -ENOMEM;
	json_array_foreach(v, i, x)
	{
		const char *s = json_string_value(x), *eq = s ? strchr(s, '=') : NULL;
		char name[256];

		if (!s || json_string_length(x) > OCI_STRING_MAX ||
		    strlen(s) != json_string_length(x))
			return err_set(e, EINVAL,
				       "image config: Env[%zu] must be a string of at most %d bytes",
				       i, OCI_STRING_MAX);
		if (!eq || !env_name_ok(s, (size_t)(eq - s)))
			return err_set(e, EINVAL,
				       "image config: Env[%zu] '%.80s' is not NAME=VALUE", i, s);
		memcpy(name, s, (size_t)(eq - s));
		name[eq - s] = '\0';
		if (json_object_set_new(env, name, json_string(eq + 1)))
			return -ENOMEM;
	}
	return 0;
}

static int string_copy(const json_t *c, const char *key, const char *as, json_t *out, struct err *e)
{
	const json_t *v = json_object_get(c, key);
	const char *s = json_string_value(v);

	if (!v || json_is_null(v) || (s && !*s))
		return 0;
	if (!s || json_string_length(v) > OCI_PATH_MAX || strlen(s) != json_string_length(v))
		return err_set(e, EINVAL, "image config: %s must be a string of at most %d bytes",
			       key, OCI_PATH_MAX);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return err_set(e, EINVAL, "image config: control character in %s", key);
	return json_object_set_new(out, as, json_string(s)) ? -ENOMEM : 0;
}

int oci_config_parse(const char *buf, size_t n, json_t **out, struct err *e)
{
	json_t *j = load(buf, n, "the image config", e), *c, *o, *cmd = NULL, *ep = NULL;
	const char *wd;
	int r;

	*out = NULL;
	if (!j)
		return -EINVAL;
	o = json_object();
	c = json_object_get(j, "config");
	if (!o) {
		json_decref(j);
		return -ENOMEM;
	}
	if (!json_is_object(j) || (c && !json_is_null(c) && !json_is_object(c))) {
		r = err_set(e, EINVAL,
			    "the image config must be an object with an object \"config\"");
		goto out;
	}
	r = env_copy(json_object_get(c, "Env"), o, e);
	if (!r)
		r = string_copy(c, "WorkingDir", "working_dir", o, e);
	wd = json_string_value(json_object_get(o, "working_dir"));
	if (!r && wd && wd[0] != '/')
		r = err_set(e, EINVAL, "image config: WorkingDir '%.200s' is not an absolute path",
			    wd);
	if (!r)
		r = string_copy(c, "User", "user", o, e);
	if (!r)
		r = argv_copy(json_object_get(c, "Cmd"), "Cmd", &cmd, e);
	if (!r && cmd)
		r = json_object_set_new(o, "cmd", cmd) ? -ENOMEM : 0;
	if (!r)
		r = argv_copy(json_object_get(c, "Entrypoint"), "Entrypoint", &ep, e);
	if (!r && ep)
		r = json_object_set_new(o, "entrypoint", ep) ? -ENOMEM : 0;
	/* the record travels in the importer's answer and kilnd's image
	 * record: bounded well below the answer's cap */
	if (!r && json_text_len(o, JSON_COMPACT) > OCI_CONFIG_RECORD_MAX)
		r = err_set(e, EINVAL,
			    "image config: its Env, Cmd, Entrypoint, User and WorkingDir take %zu bytes as JSON, more than %u: make them smaller",
			    json_text_len(o, JSON_COMPACT), OCI_CONFIG_RECORD_MAX);
out:
	json_decref(j);
	if (r)
		json_decref(o);
	else
		*out = o;
	return r;
}
