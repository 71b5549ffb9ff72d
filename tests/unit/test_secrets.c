/*
 * secrets (api/kilnd/registry/secrets.c): kilnd's store over a real state
 * directory and registry: secrets.json read at start (none, good, and the
 * faults that refuse the start with the file kept), changes written 0600,
 * the sandboxes whose current firewall `http` rules name a secret (the
 * hook the egress proxy's supervision uses: only the owner's sandboxes,
 * a sandbox whose rules cannot be read counted in) and a sandbox's proxy
 * file through the store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/stat.h>

#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/registry/secrets.h"
#include "tests/unit/min_spec.h"
#include "tmpdir.h"

/* kilnd.c's (a program's main file is never linked into a test). */
int64_t wall_ms(void)
{
	return 1732269600000;
}

#define GH_RULE                                                                               \
	"{\"http\":[{\"host\":\"api.github.com\",\"intercept\":true,\"inject\":[{\"header\":" \
	"\"authorization\",\"secret\":\"github\",\"format\":\"Bearer {}\"}]}]}"

static void put_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* d over state dir f->dir, with sandboxes of owner 1000 (a: rules naming
 * github in firewall.json; b: none; d: a firewall.json that does not
 * parse) and of owner 1001 (c: rules naming github). */
static void setup(struct kilnd *d, const char *state)
{
	static const struct {
		const char *id;
		uid_t owner;
		const char *fw;
	} sb[] = {
		{ "aaaaaaaaaaaa", 1000, GH_RULE },
		{ "bbbbbbbbbbbb", 1000, NULL },
		{ "cccccccccccc", 1001, GH_RULE },
		{ "dddddddddddd", 1000, "{\"http\":" },
	};

	memset(d, 0, sizeof(*d));
	snprintf(d->cfg.state_dir, sizeof(d->cfg.state_dir), "%s", state);
	pthread_mutex_init(&d->reg.mu, NULL);
	pthread_mutex_init(&d->metrics_mu, NULL);
	for (size_t i = 0; i < sizeof(sb) / sizeof(sb[0]); i++) {
		struct sandbox *s = sandbox_new(d);

		assert_non_null(s);
		snprintf(s->rec.id, sizeof(s->rec.id), "%s", sb[i].id);
		snprintf(s->dir, sizeof(s->dir), "%s/%s", state, sb[i].id);
		assert_int_equal(mkdir(s->dir, 0700), 0);
		if (sb[i].fw)
			put_file(s->dir, "firewall.json", sb[i].fw, 0600);
		s->rec.owner_uid = sb[i].owner;
		s->rec.state = SANDBOX_STOPPED;
		min_spec(&s->rec.spec);
		s->rec.checkpoints = json_array();
		assert_int_equal(sandbox_registry_add_locked(d, s), 0);
	}
}

static void teardown(struct kilnd *d)
{
	while (d->reg.n) {
		struct sandbox *s = d->reg.v[--d->reg.n];

		assert_int_equal(--s->refs, 0);
		sandbox_free(s);
	}
	free(d->reg.v);
	secrets_fini(d);
	pthread_mutex_destroy(&d->reg.mu);
	pthread_mutex_destroy(&d->metrics_mu);
}

static void test_sandboxes_naming(void **state)
{
	struct tmpdir_fx *f = *state;
	char ids[4][SANDBOX_ID_LEN + 1];
	struct kilnd d;
	struct err e;

	setup(&d, f->dir);
	assert_int_equal(secrets_init(&d, &e), 0);
	/* a and the unreadable d (fail closed); not b (no http), not 1001's c */
	assert_int_equal(secrets_sandboxes_naming(&d, 1000, "github", ids, 4), 2);
	assert_string_equal(ids[0], "aaaaaaaaaaaa");
	assert_string_equal(ids[1], "dddddddddddd");
	assert_int_equal(secrets_sandboxes_naming(&d, 1001, "github", ids, 4), 1);
	assert_string_equal(ids[0], "cccccccccccc");
	assert_int_equal(secrets_sandboxes_naming(&d, 1000, "npm", ids, 4), 1); /* d only */
	assert_int_equal(secrets_sandboxes_naming(&d, 0, "github", ids, 4), 0);
	/* more than cap: counted, cap written */
	assert_int_equal(secrets_sandboxes_naming(&d, 1000, "github", ids, 1), 2);
	assert_int_equal(secrets_changed(&d, 1000, "github"), 2);
	for (size_t i = 0; i < d.reg.n; i++)
		assert_int_equal(d.reg.v[i]->refs, 1); /* every reference given back */
	teardown(&d);
}

static void test_store_and_proxy_file(void **state)
{
	struct tmpdir_fx *f = *state;
	struct http_rules *r = NULL;
	struct net_rules_err ne;
	char path[PATH_MAX + 64], buf[512];
	struct api_err ae;
	struct kilnd d;
	struct stat st;
	size_t missing;
	bool created;
	json_t *view, *fw;
	struct err e;
	FILE *fp;

	setup(&d, f->dir);
	assert_int_equal(secrets_init(&d, &e), 0);
	assert_int_equal(secrets_put(&d, 1000, "github", "ghp_mine", 8, &created, &view, &ae), 0);
	assert_true(created);
	assert_null(json_object_get(view, "value"));
	json_decref(view);
	assert_int_equal(secrets_put(&d, 1001, "github", "ghp_other", 9, &created, &view, &ae), 0);
	json_decref(view);
	assert_int_equal(secrets_total(&d), 2);
	snprintf(path, sizeof(path), "%s/secrets.json", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	fw = json_loads(GH_RULE, 0, NULL);
	assert_int_equal(http_rules_parse(json_object_get(fw, "http"), &r, &ne), 0);
	json_decref(fw);
	assert_int_equal(secrets_sandbox_file(&d, 1000, r, f->dfd, "aaaaaaaaaaaa/secrets.json",
					      (uid_t)-1, (gid_t)-1, &missing, &e),
			 0);
	assert_int_equal(missing, 0);
	snprintf(path, sizeof(path), "%s/aaaaaaaaaaaa/secrets.json", f->dir);
	fp = fopen(path, "r");
	assert_non_null(fp);
	buf[fread(buf, 1, sizeof(buf) - 1, fp)] = '\0';
	fclose(fp);
	assert_non_null(strstr(buf, "ghp_mine"));
	assert_null(strstr(buf, "ghp_other")); /* another owner's never */
	http_rules_free(r);

	assert_int_equal(secrets_remove(&d, 1000, "github", &ae), 0);
	assert_int_equal(secrets_remove(&d, 1000, "github", &ae), -1);
	assert_int_equal(ae.code, API_E_NOT_FOUND);
	teardown(&d);
}

static void test_start_reads_the_file(void **state)
{
	struct tmpdir_fx *f = *state;
	static const char good[] =
		"{\"version\":1,\"secrets\":[{\"owner\":7,\"name\":\"a\",\"value\":"
		"\"VALUE_A\",\"created_ms\":1,\"updated_ms\":2}]}";
	static const struct {
		const char *text;
		mode_t mode;
		const char *want;
	} bad[] = {
		{ good, 0644, "mode 0644 lets others read it" },
		{ good, 0620, "mode 0620" },
		{ "{\"version\":1,\"secrets\":[{\"value\":\"VALUE_B\"", 0600,
		  "not valid JSON (line" },
		{ "{\"version\":3,\"secrets\":[]}", 0600, "version 3" },
	};
	char path[PATH_MAX + 64], back[512];
	struct kilnd d;
	struct err e;
	json_t *list;
	FILE *fp;

	memset(&d, 0, sizeof(d));
	snprintf(d.cfg.state_dir, sizeof(d.cfg.state_dir), "%s", f->dir);
	snprintf(path, sizeof(path), "%s/secrets.json", f->dir);
	put_file(f->dir, "secrets.json", good, 0600);
	assert_int_equal(secrets_init(&d, &e), 0);
	list = secrets_list(&d, 7);
	assert_int_equal(json_array_size(json_object_get(list, "secrets")), 1);
	json_decref(list);
	secrets_fini(&d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		put_file(f->dir, "secrets.json", bad[i].text, bad[i].mode);
		assert_int_equal(secrets_init(&d, &e), -1);
		if (!strstr(e.msg, bad[i].want) || !strstr(e.msg, path))
			fail_msg("case %zu: \"%s\"", i, e.msg);
		assert_null(strstr(e.msg, "VALUE_"));
		assert_null(d.secrets);
		fp = fopen(path, "r");
		back[fread(back, 1, sizeof(back) - 1, fp)] = '\0';
		fclose(fp);
		assert_string_equal(back, bad[i].text); /* kept */
	}
	/* a symbolic link in its place */
	unlink(path);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(secrets_init(&d, &e), -1);
	assert_non_null(strstr(e.msg, "a symbolic link"));
	unlink(path);
	/* a fifo: refused at once, not waited on */
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(secrets_init(&d, &e), -1);
	assert_non_null(strstr(e.msg, "not a regular file"));
	unlink(path);
	/* none at all: an empty store */
	assert_int_equal(secrets_init(&d, &e), 0);
	assert_int_equal(secrets_total(&d), 0);
	secrets_fini(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sandboxes_naming, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_store_and_proxy_file, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_start_reads_the_file, tmpdir_setup,
						tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
