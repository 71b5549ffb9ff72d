/*
 * Unit tests of api/kilnd/registry/sandbox_record.c: a sandbox's data as
 * the API shows it (the sandbox object of docs/api.md) and as kilnd keeps
 * it in <state>/sandboxes/<id>/meta.json, so a restarted kilnd can list the
 * sandboxes it had.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/registry/sandbox_record.h"
#include "tests/unit/min_spec.h"

/* The rule itself, and the owner through meta.json. */
static void test_visible_and_persisted(void **state)
{
	struct sandbox_record r, back;
	struct api_err e;
	json_t *m;

	(void)state;
	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "aaaaaaaaaaaa");
	snprintf(r.image_path, sizeof(r.image_path), "/var/lib/kiln/images/m.ext4");
	min_spec(&r.spec);
	r.owner_uid = 1000;
	assert_true(sandbox_record_visible(&r, 1000));
	assert_true(sandbox_record_visible(&r, 0));
	assert_false(sandbox_record_visible(&r, 1001));
	/* A warm pool's sandbox is nobody's, root's neither. */
	r.pooled = true;
	assert_false(sandbox_record_visible(&r, 1000));
	assert_false(sandbox_record_visible(&r, 0));
	r.pooled = false;
	m = sandbox_record_persist(&r);
	assert_non_null(m);
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_int_equal(back.owner_uid, 1000);
	sandbox_record_free(&back);
	/* Written before owners existed: root's. */
	json_object_del(m, "owner_uid");
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_int_equal(back.owner_uid, 0);
	assert_false(sandbox_record_visible(&back, 1000));
	sandbox_record_free(&back);
	json_object_set_new(m, "owner_uid", json_string("1000"));
	assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
	assert_non_null(strstr(e.msg, "owner_uid"));
	json_object_set_new(m, "owner_uid", json_integer(-1));
	assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
	json_decref(m);
	sandbox_record_free(&r);
}

/* The jail's and the egress proxy's ids survive meta.json; null is none; a bad pair is refused by name. */
static void test_ids_persisted(void **state)
{
	struct sandbox_record r, back;
	struct api_err e;
	json_t *m, *v;

	(void)state;
	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "aaaaaaaaaaaa");
	snprintf(r.image_path, sizeof(r.image_path), "/var/lib/kiln/images/m.ext4");
	min_spec(&r.spec);
	r.jail_id = 2000000007;
	r.egress_id = 2000065544;
	m = sandbox_record_persist(&r);
	assert_non_null(m);
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_int_equal(back.jail_id, 2000000007);
	assert_int_equal(back.egress_id, 2000065544);
	sandbox_record_free(&back);
	/* The API shows both. */
	v = sandbox_record_view(&r);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "egress"), "gid")),
			 2000065544);
	json_decref(v);
	/* Null: none. */
	json_object_set_new(m, "egress", json_null());
	assert_int_equal(sandbox_record_restore(m, &back, &e), 0);
	assert_int_equal(back.egress_id, 0);
	sandbox_record_free(&back);
	/* uid and gid apart, or 0: refused, naming the field. */
	json_object_set_new(m, "egress", json_pack("{s:i,s:i}", "uid", 5, "gid", 6));
	assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
	assert_non_null(strstr(e.msg, "'egress'"));
	json_object_set_new(m, "egress", json_pack("{s:i,s:i}", "uid", 0, "gid", 0));
	assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
	json_object_set_new(m, "egress", json_null());
	json_object_set_new(m, "jail", json_pack("{s:i}", "uid", 5));
	assert_int_equal(sandbox_record_restore(m, &back, &e), -1);
	assert_non_null(strstr(e.msg, "'jail'"));
	json_decref(m);
	sandbox_record_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_visible_and_persisted),
		cmocka_unit_test(test_ids_persisted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
