/*
 * api/image-import/oci_spec.c: an image archive's JSON documents (OCI
 * index, manifest, config; docker save's manifest.json) from a hostile
 * archive: what they name is read with its digest, anything malformed is
 * refused saying which document and field. (The digests themselves:
 * test_digest.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/image-import/oci_spec.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static struct err e;

static int parse_index(const char *s, struct oci_blob *b)
{
	return oci_index_parse(s, strlen(s), NULL, b, &e);
}

static int parse_index_ref(const char *s, const char *ref, struct oci_blob *b)
{
	return oci_index_parse(s, strlen(s), ref, b, &e);
}

#define TAGGED(d, tag)                                                                  \
	"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" d \
	"\",\"size\":1,\"annotations\":{\"org.opencontainers.image.ref.name\":\"" tag "\"}}"

/* umoci's layout: one entry per tag, no platform. Without a ref it is
 * refused naming the tags (it once said "0 manifests": the count was read
 * from a freed document); with one, that tag's manifest. */
static void test_index_tags(void **state)
{
	const char *three = "{\"schemaVersion\":2,\"manifests\":[" TAGGED(D1, "latest") "," TAGGED(
		D2, "v1") "," TAGGED(D3, "suid") "]}";
	const char *multi =
		"{\"manifests\":[{\"digest\":\"" D1
		"\",\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"},"
		"\"annotations\":{\"org.opencontainers.image.ref.name\":\"v1\"}},"
		"{\"digest\":\"" D2 "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"},"
		"\"annotations\":{\"org.opencontainers.image.ref.name\":\"v1\"}}," TAGGED(D3,
											  "other") "]}";
	struct oci_blob b;

	(void)state;
	assert_int_equal(parse_index(three, &b), -EINVAL);
	assert_string_equal(
		e.msg,
		"index.json lists 3 manifests with the tags 'latest', 'v1', 'suid': choose one with ?ref=TAG (kiln image import --ref TAG)");
	assert_int_equal(parse_index_ref(three, "v1", &b), 0);
	assert_string_equal(b.digest, D2);
	assert_int_equal(parse_index_ref(three, "suid", &b), 0);
	assert_string_equal(b.digest, D3);
	assert_int_equal(parse_index_ref(three, "v2", &b), -EINVAL);
	assert_string_equal(
		e.msg,
		"index.json has no manifest tagged 'v2' (its tags: 'latest', 'v1', 'suid'): give one of those as the ref");
	/* one tagged entry without a platform: taken, with or without its ref */
	assert_int_equal(parse_index("{\"manifests\":[" TAGGED(D1, "latest") "]}", &b), 0);
	assert_string_equal(b.digest, D1);
	assert_int_equal(parse_index_ref("{\"manifests\":[" TAGGED(D1, "latest") "]}", "latest",
					 &b),
			 0);
	/* a tag of several platforms: its linux/amd64 one */
	assert_int_equal(parse_index_ref(multi, "v1", &b), 0);
	assert_string_equal(b.digest, D2);
	assert_int_equal(parse_index(multi, &b), -EINVAL);
	assert_non_null(strstr(e.msg, "'v1', 'other'"));
	/* untagged layout, a ref asked for */
	assert_int_equal(parse_index_ref("{\"manifests\":[{\"digest\":\"" D1 "\"}]}", "x", &b),
			 -EINVAL);
	assert_string_equal(e.msg,
			    "index.json has no manifest tagged 'x' (its manifests carry no tag)");
	/* a tag that is not a string is no tag */
	assert_int_equal(
		parse_index_ref("{\"manifests\":[{\"digest\":\"" D1
				"\",\"annotations\":{\"org.opencontainers.image.ref.name\":7}}]}",
				"7", &b),
		-EINVAL);
}

static void test_digest_valid(void **state)
{
	(void)state;
	assert_true(oci_digest_valid(D1));
	assert_false(oci_digest_valid("sha256:ABCD"));
	assert_false(oci_digest_valid(
		"sha512:1111111111111111111111111111111111111111111111111111111111111111"));
	assert_false(oci_digest_valid(D1 "0"));
	assert_false(oci_digest_valid(
		"sha256:111111111111111111111111111111111111111111111111111111111111111G"));
}

static void test_index(void **state)
{
	struct oci_blob b;

	(void)state;
	assert_int_equal(parse_index("{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" D1
				     "\"}]}",
				     &b),
			 0);
	assert_string_equal(b.digest, D1);
	assert_string_equal(
		b.path,
		"blobs/sha256/1111111111111111111111111111111111111111111111111111111111111111");
	/* several: the linux/amd64 one */
	assert_int_equal(parse_index("{\"manifests\":[{\"digest\":\"" D1
				     "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
				     "{\"digest\":\"" D2
				     "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}",
				     &b),
			 0);
	assert_string_equal(b.digest, D2);
	assert_int_equal(parse_index("{\"manifests\":[{\"digest\":\"" D1 "\"},{\"digest\":\"" D2
				     "\"}]}",
				     &b),
			 -EINVAL);
	assert_string_equal(
		e.msg,
		"index.json lists 2 manifests and none for linux/amd64: export one platform");
	assert_int_equal(
		parse_index("{\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"digest\":\"" D1
			    "\"}]}",
			    &b),
		-EINVAL);
	assert_non_null(strstr(e.msg, "nested"));
	assert_int_equal(parse_index("{\"manifests\":[]}", &b), -EINVAL);
	assert_int_equal(parse_index("{\"manifests\":[{\"digest\":\"sha256:../../etc\"}]}", &b),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "64 hex"));
	assert_int_equal(parse_index("{\"manifests\":[{\"digest\":1}]}", &b), -EINVAL);
	assert_int_equal(parse_index("[", &b), -EINVAL);
	assert_non_null(strstr(e.msg, "not JSON"));
	assert_int_equal(parse_index("{\"manifests\":[{\"digest\":\"" D1 "\"}],\"manifests\":[]}",
				     &b),
			 -EINVAL); /* duplicate key */
}

static void test_manifest(void **state)
{
	static struct oci_image im;
	const char *ok = "{\"config\":{\"digest\":\"" D1 "\"},\"layers\":[{\"digest\":\"" D2
			 "\"},{\"digest\":\"" D3 "\"}]}";
	char *many = malloc(OCI_LAYERS_MAX * 90 + 200), *p;

	(void)state;
	assert_int_equal(oci_manifest_parse(ok, strlen(ok), &im, &e), 0);
	assert_int_equal(im.nlayers, 2);
	assert_string_equal(im.config.digest, D1);
	assert_string_equal(im.layers[1].digest, D3);
	assert_int_equal(oci_manifest_parse("{\"config\":{\"digest\":\"" D1 "\"}}", 80, &im, &e),
			 -EINVAL);
	assert_int_equal(oci_manifest_parse("{\"layers\":[]}", 13, &im, &e), -EINVAL);
	p = many + sprintf(many, "{\"config\":{\"digest\":\"" D1 "\"},\"layers\":[");
	for (int i = 0; i <= OCI_LAYERS_MAX; i++)
		p += sprintf(p, "%s{\"digest\":\"" D2 "\"}", i ? "," : "");
	strcpy(p, "]}");
	assert_int_equal(oci_manifest_parse(many, strlen(many), &im, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "at most"));
	free(many);
}

static void test_docker_manifest(void **state)
{
	static struct oci_image im;
	const char *ok =
		"[{\"Config\":\"1111111111111111111111111111111111111111111111111111111111111111.json\","
		"\"Layers\":[\"abc/layer.tar\",\"blobs/sha256/2222222222222222222222222222222222222222222222222222222222222222\"]}]";
	const char *two =
		"[{\"Config\":\"a.json\",\"Layers\":[]},{\"Config\":\"b.json\",\"Layers\":[]}]";
	const char *up = "[{\"Config\":\"a.json\",\"Layers\":[\"../../etc/shadow\"]}]";

	(void)state;
	assert_int_equal(oci_docker_manifest_parse(ok, strlen(ok), &im, &e), 0);
	assert_string_equal(im.config.digest, D1);
	assert_int_equal(im.nlayers, 2);
	assert_string_equal(im.layers[0].path, "abc/layer.tar");
	assert_string_equal(im.layers[0].digest, "");
	assert_string_equal(im.layers[1].digest, D2);
	assert_int_equal(oci_docker_manifest_parse(two, strlen(two), &im, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "one image per archive"));
	assert_int_equal(oci_docker_manifest_parse(up, strlen(up), &im, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "Layers[0]"));
	/* a Config out of the archive: said why, once (it said "empty path") */
	up = "[{\"Config\":\"../../etc/passwd\",\"Layers\":[]}]";
	assert_int_equal(oci_docker_manifest_parse(up, strlen(up), &im, &e), -EINVAL);
	assert_string_equal(
		e.msg,
		"manifest.json: Config '../../etc/passwd': '..' component (a member may not leave the image root)");
	up = "[{\"Config\":\"./\",\"Layers\":[]}]";
	assert_int_equal(oci_docker_manifest_parse(up, strlen(up), &im, &e), -EINVAL);
	assert_string_equal(e.msg, "manifest.json: Config './': names no file");
	assert_int_equal(oci_docker_manifest_parse("{}", 2, &im, &e), -EINVAL);
	assert_int_equal(oci_docker_manifest_parse("[{\"Config\":5,\"Layers\":[]}]", 26, &im, &e),
			 -EINVAL);
}

static void test_config(void **state)
{
	const char *ok =
		"{\"config\":{\"Env\":[\"PATH=/bin\",\"A=b=c\",\"EMPTY=\"],\"WorkingDir\":\"/srv\",\"User\":\"1000\","
		"\"Cmd\":[\"sh\"],\"Entrypoint\":null}}";
	json_t *c;

	(void)state;
	assert_int_equal(oci_config_parse(ok, strlen(ok), &c, &e), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "env"), "A")),
			    "b=c");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "env"), "EMPTY")),
			    "");
	assert_string_equal(json_string_value(json_object_get(c, "working_dir")), "/srv");
	assert_string_equal(json_string_value(json_object_get(c, "user")), "1000");
	assert_int_equal(json_array_size(json_object_get(c, "cmd")), 1);
	assert_null(json_object_get(c, "entrypoint"));
	json_decref(c);
	assert_int_equal(oci_config_parse("{}", 2, &c, &e), 0); /* no config at all: no defaults */
	assert_int_equal(json_object_size(c), 0);
	json_decref(c);
	assert_int_equal(oci_config_parse("{\"config\":{\"Env\":[\"NOEQUALS\"]}}", 31, &c, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "NAME=VALUE"));
	assert_null(c);
	assert_int_equal(oci_config_parse("{\"config\":{\"Env\":[\"=x\"]}}", 25, &c, &e), -EINVAL);
	assert_int_equal(oci_config_parse("{\"config\":{\"Env\":[\"A B=x\"]}}", 28, &c, &e),
			 -EINVAL);
	assert_int_equal(oci_config_parse("{\"config\":{\"Env\":\"A=b\"}}", 24, &c, &e), -EINVAL);
	assert_int_equal(oci_config_parse("{\"config\":{\"WorkingDir\":\"srv\"}}", 31, &c, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "absolute"));
	assert_int_equal(oci_config_parse("{\"config\":{\"User\":\"a\\nb\"}}", 26, &c, &e),
			 -EINVAL);
	assert_int_equal(oci_config_parse("{\"config\":{\"Cmd\":[1]}}", 22, &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "Cmd[0]"));
	assert_int_equal(oci_config_parse("{\"config\":[]}", 13, &c, &e), -EINVAL);
	assert_int_equal(oci_config_parse("{\"config\":{\"Env\":[\"A=\\u0000\"]}}", 31, &c, &e),
			 -EINVAL);
}

/* Each string within its cap, the whole record over 256 KiB: refused
 * (it would not fit the importer's answer), one just under is taken. */
static void test_config_record_cap(void **state)
{
	size_t cap = 1u << 20, k;
	char *big = malloc(cap);
	json_t *c;

	(void)state;
	assert_non_null(big);
	k = (size_t)snprintf(big, cap, "{\"config\":{\"Cmd\":[");
	/* 5 strings of 60000 bytes: 300000 > 262144 */
	for (int i = 0; i < 5; i++) {
		big[k++] = i ? ',' : ' ';
		big[k++] = '"';
		memset(big + k, 'x', 60000);
		k += 60000;
		big[k++] = '"';
	}
	k += (size_t)snprintf(big + k, cap - k, "]}}");
	assert_int_equal(oci_config_parse(big, k, &c, &e), -EINVAL);
	assert_null(c);
	assert_non_null(strstr(e.msg, "more than 262144"));
	/* 4 of them: 240000 and some, taken */
	k = (size_t)snprintf(big, cap, "{\"config\":{\"Cmd\":[");
	for (int i = 0; i < 4; i++) {
		big[k++] = i ? ',' : ' ';
		big[k++] = '"';
		memset(big + k, 'x', 60000);
		k += 60000;
		big[k++] = '"';
	}
	k += (size_t)snprintf(big + k, cap - k, "]}}");
	assert_int_equal(oci_config_parse(big, k, &c, &e), 0);
	assert_int_equal(json_array_size(json_object_get(c, "cmd")), 4);
	json_decref(c);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_valid),      cmocka_unit_test(test_index),
		cmocka_unit_test(test_index_tags),        cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_docker_manifest),   cmocka_unit_test(test_config),
		cmocka_unit_test(test_config_record_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
