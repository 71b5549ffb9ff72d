/*
 * Unit tests of api/kilnd/core/preview_spec.c: a sandbox's preview URLs
 * (docs/api.md, "Preview URLs") as data: the POST .../previews body, the
 * entry a sandbox record keeps for each preview in meta.json, and the
 * object the API shows.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/preview_spec.h"
#include "tests/unit/preview_ids.h"

static void test_token_equal(void **state)
{
	(void)state;
	assert_true(preview_token_equal(TOK, strlen(TOK), TOK));
	assert_false(preview_token_equal(TOK, strlen(TOK) - 1, TOK));
	assert_false(preview_token_equal("", 0, TOK));
	assert_false(preview_token_equal(TOK, strlen(TOK), NULL));
	assert_false(preview_token_equal("10112233445566778899aabbccddeeff0011223344556677",
					 strlen(TOK), TOK));
	assert_false(preview_token_equal("00112233445566778899aabbccddeeff0011223344556678",
					 strlen(TOK), TOK));
}

static void test_spec_body_and_entries(void **state)
{
	struct api_err e;
	uint8_t raw[PREVIEW_TOKEN_BYTES];
	struct preview_where w = { .addr = "127.0.0.1", .port = 8443, .domain = "localhost" };
	json_t *b, *entry, *v, *list;
	uint16_t port;
	bool pub;

	(void)state;
	b = json_pack("{s:i}", "port", 8080);
	assert_int_equal(preview_body_parse(b, &port, &pub, &e), 0);
	assert_int_equal(port, 8080);
	assert_false(pub);
	json_decref(b);
	b = json_pack("{s:i,s:b}", "port", 0, "public", 1);
	assert_int_equal(preview_body_parse(b, &port, &pub, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	json_decref(b);
	b = json_pack("{s:i,s:s}", "port", 1, "token", "mine");
	assert_int_equal(preview_body_parse(b, &port, &pub, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	json_decref(b);
	b = json_pack("{s:s}", "port", "80");
	assert_int_equal(preview_body_parse(b, &port, &pub, &e), -1);
	json_decref(b);

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)((i % 16) * 0x11);
	entry = preview_entry_new(8080, false, raw, "2026-01-01T00:00:00.000Z");
	assert_int_equal(preview_entry_check(entry, &e), 0);
	assert_string_equal(json_string_value(json_object_get(entry, "token")), TOK);
	v = preview_view(entry, ID, &w);
	assert_string_equal(json_string_value(json_object_get(v, "url")),
			    "http://8080-" ID ".localhost:8443/");
	assert_string_equal(json_string_value(json_object_get(v, "path_url")),
			    "http://127.0.0.1:8443/preview/" ID "/8080/");
	assert_string_equal(json_string_value(json_object_get(v, "id")), ID "/8080");
	assert_string_equal(json_string_value(json_object_get(v, "token")), TOK);
	assert_true(json_is_false(json_object_get(v, "public")));
	json_decref(v);
	v = preview_view(entry, ID, NULL);
	assert_true(json_is_null(json_object_get(v, "url")));
	json_decref(v);

	/* meta.json: a damaged list is refused whole. */
	list = json_array();
	json_array_append(list, entry);
	assert_int_equal(preview_list_check(list, &e), 0);
	json_array_append_new(list, json_deep_copy(entry));
	assert_int_equal(preview_list_check(list, &e), -1);
	assert_non_null(strstr(e.msg, "two previews of port 8080"));
	json_array_clear(list);
	json_object_set_new(entry, "token", json_string("00112233"));
	json_array_append(list, entry);
	assert_int_equal(preview_list_check(list, &e), -1);
	json_object_set_new(entry, "token", json_string(TOK));
	json_object_set_new(entry, "public", json_true());
	assert_int_equal(preview_entry_check(entry, &e), -1);
	json_object_del(entry, "token");
	assert_int_equal(preview_entry_check(entry, &e), 0);
	json_object_set_new(entry, "extra", json_true());
	assert_int_equal(preview_entry_check(entry, &e), -1);
	v = json_string("x");
	assert_int_equal(preview_list_check(v, &e), -1);
	json_decref(v);
	assert_int_equal(preview_list_check(NULL, &e), 0);
	json_decref(list);
	json_decref(entry);
	entry = preview_entry_new(1, true, raw, "t");
	assert_null(json_object_get(entry, "token"));
	json_decref(entry);
}

static void test_domain_valid(void **state)
{
	char longname[300];

	(void)state;
	assert_true(preview_domain_valid("localhost"));
	assert_true(preview_domain_valid("preview.example.com"));
	assert_true(preview_domain_valid("a-b.c0"));
	assert_false(preview_domain_valid(""));
	assert_false(preview_domain_valid("Example.com"));
	assert_false(preview_domain_valid("-a.com"));
	assert_false(preview_domain_valid("a-.com"));
	assert_false(preview_domain_valid("a..com"));
	assert_false(preview_domain_valid(".a"));
	assert_false(preview_domain_valid("a."));
	assert_false(preview_domain_valid("a_b"));
	assert_false(preview_domain_valid("a:80"));
	memset(longname, 'a', sizeof(longname));
	longname[64] = '\0';
	assert_false(preview_domain_valid(longname));
	/* "a.a.a...a": 253 bytes is the most a name may have. */
	for (int i = 0; i < 290; i++)
		longname[i] = i % 2 ? '.' : 'a';
	longname[253] = '\0';
	assert_true(preview_domain_valid(longname));
	longname[252] = '\0';
	assert_false(preview_domain_valid(longname)); /* ends with '.' */
	longname[252] = 'a';
	longname[253] = '.';
	longname[254] = 'a';
	longname[255] = '\0';
	assert_false(preview_domain_valid(longname)); /* 255 bytes */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_equal),
		cmocka_unit_test(test_spec_body_and_entries),
		cmocka_unit_test(test_domain_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
