/*
 * Unit tests of api/kilnd/registry/sandbox.c: sandbox owners
 * (docs/security.md, "Sandbox owners and shares") in the real registry
 * lookup (sandbox_get, sandbox_touch) and list that every endpoint goes
 * through: a client other than root sees and reaches only the sandboxes
 * its uid created, and another uid's sandbox is answered exactly like one
 * that does not exist; root reaches all.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/kilnd/registry/sandbox_impl.h"
#include "tests/unit/min_spec.h"

/* kilnd.c's (a program's main file is never linked into a test). */
int64_t wall_ms(void)
{
	return 1732269600000;
}

static const struct peer root = { .pid = 1, .uid = 0, .gid = 0 };
static const struct peer alice = { .pid = 2, .uid = 1000, .gid = 1000 };
static const struct peer bob = { .pid = 3, .uid = 1001, .gid = 1001 };

/* A registry holding root's "aaaaaaaaaaaa" and alice's "bbbbbbbbbbbb". */
static void setup_registry(struct kilnd *d)
{
	static const struct {
		const char *id;
		uid_t owner;
	} sb[] = { { "aaaaaaaaaaaa", 0 }, { "bbbbbbbbbbbb", 1000 } };

	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->reg.mu, NULL);
	pthread_mutex_init(&d->metrics_mu, NULL);
	for (size_t i = 0; i < 2; i++) {
		struct sandbox *s = sandbox_new(d);

		assert_non_null(s);
		snprintf(s->rec.id, sizeof(s->rec.id), "%s", sb[i].id);
		s->rec.owner_uid = sb[i].owner;
		s->rec.state = SANDBOX_STOPPED;
		min_spec(&s->rec.spec);
		s->rec.checkpoints = json_array();
		assert_int_equal(sandbox_registry_add_locked(d, s), 0);
	}
}

static void free_registry(struct kilnd *d)
{
	while (d->reg.n) {
		struct sandbox *s = d->reg.v[--d->reg.n];

		assert_int_equal(--s->refs, 0);
		sandbox_free(s);
	}
	free(d->reg.v);
	pthread_mutex_destroy(&d->reg.mu);
	pthread_mutex_destroy(&d->metrics_mu);
}

/* Another uid's sandbox: the very answer of a missing one. */
static void test_get_hides_other_uids(void **state)
{
	struct api_err e, missing;
	struct sandbox *s;
	struct kilnd d;

	(void)state;
	setup_registry(&d);
	assert_null(sandbox_get(&d, &alice, "cccccccccccc", &missing));
	assert_int_equal(missing.code, API_E_SANDBOX_NOT_FOUND);

	assert_null(sandbox_get(&d, &alice, "aaaaaaaaaaaa", &e));
	assert_int_equal(e.code, API_E_SANDBOX_NOT_FOUND);
	assert_int_equal(api_code_status(e.code), 404);
	/* Same words as for a missing id: nothing tells the two apart. */
	assert_non_null(strstr(e.msg, "no sandbox 'aaaaaaaaaaaa' (GET /v1/sandboxes lists them)"));
	assert_null(sandbox_get(&d, &bob, "bbbbbbbbbbbb", &e));
	assert_int_equal(e.code, API_E_SANDBOX_NOT_FOUND);
	assert_non_null(strstr(e.msg, "no sandbox 'bbbbbbbbbbbb'"));

	/* Its owner reaches it; root reaches every sandbox. */
	s = sandbox_get(&d, &alice, "bbbbbbbbbbbb", &e);
	assert_non_null(s);
	sandbox_put(s);
	s = sandbox_get(&d, &root, "bbbbbbbbbbbb", &e);
	assert_non_null(s);
	sandbox_put(s);
	s = sandbox_get(&d, &root, "aaaaaaaaaaaa", &e);
	assert_non_null(s);
	sandbox_put(s);

	/* A touch by another uid is no activity on it. */
	d.reg.v[0]->active_mono = 0;
	sandbox_touch(&d, &alice, "aaaaaaaaaaaa");
	assert_int_equal(d.reg.v[0]->active_mono, 0);
	sandbox_touch(&d, &root, "aaaaaaaaaaaa");
	assert_true(d.reg.v[0]->active_mono != 0);
	free_registry(&d);
}

static size_t listed(json_t *l, const char *id)
{
	size_t i, n = 0;
	json_t *v;

	json_array_foreach(json_object_get(l, "sandboxes"), i, v)
		n += strcmp(json_string_value(json_object_get(v, "id")), id) == 0;
	return n;
}

static void test_list_shows_own(void **state)
{
	struct list_filter f;
	struct kilnd d;
	json_t *l;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.state = -1; /* any */
	setup_registry(&d);
	l = sandbox_list(&d, &alice, &f);
	assert_int_equal(json_array_size(json_object_get(l, "sandboxes")), 1);
	assert_int_equal(listed(l, "bbbbbbbbbbbb"), 1);
	assert_int_equal(json_integer_value(
				 json_object_get(json_array_get(json_object_get(l, "sandboxes"), 0),
						 "owner_uid")),
			 1000);
	json_decref(l);
	l = sandbox_list(&d, &bob, &f);
	assert_int_equal(json_array_size(json_object_get(l, "sandboxes")), 0);
	json_decref(l);
	l = sandbox_list(&d, &root, &f);
	assert_int_equal(json_array_size(json_object_get(l, "sandboxes")), 2);
	json_decref(l);
	free_registry(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_hides_other_uids),
		cmocka_unit_test(test_list_shows_own),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
