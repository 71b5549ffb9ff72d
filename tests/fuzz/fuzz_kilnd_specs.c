/*
 * fuzz_kilnd_specs: every JSON request body kilnd validates: sandbox
 * create, start and stop (api/kilnd/core/sandbox_spec.c), exec
 * (bodies/exec_spec.c), processes, shell, signal and resize
 * (bodies/proc_spec.c), files mkdir/remove/rename and ports
 * (bodies/files_spec.c), firewall rules (core/firewall_spec.c),
 * checkpoints and forks (registry/checkpoint.c), the field helpers
 * they share (core/json_fields.c), and warm pools (core/pool_spec.c: the
 * --pool argument, and which creates a pool serves).
 *
 * Input: parser (1 byte), then the body as the HTTP server decodes it
 * (json_loadb with JSON_REJECT_DUPLICATES; text jansson refuses is
 * jansson's business and skipped); for parser 18 the bytes are a --pool
 * argument instead.
 * Invariants: a refusal is a client error code (bad_json..too_large) with
 * a message. An accepted sandbox spec renders to JSON that parses again
 * to the same JSON; its names hold none of the characters docs/api.md
 * forbids where they end up (no space or quote in the hostname or a guest
 * mount point on the kernel command line, no control character in a host path
 * (a snapshot DIR is a control socket line), image and checkpoint names are file names);
 * numbers are within the limits given. An accepted exec has argv[argc] ==
 * NULL, 1..AGENT_ARGV_MAX arguments, an output cap within its bound and,
 * confined, a cwd inside /workspace;
 * canonical firewall rules canonicalise to themselves. A create that a
 * pool serves has every VM-shaping field of the pool's spec; an accepted
 * --pool argument has a valid image name, a size within bounds and a
 * create body the spec parser takes.
 */
#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/core/pool_spec.h"
#include "api/kilnd/core/sandbox_spec.h"
#include "api/kilnd/bodies/exec_spec.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/bodies/files_spec.h"
#include "api/kilnd/core/port_spec.h"
#include "fuzz.h"

static const struct sandbox_limits lim = { .max_cpus = 8,
					   .max_memory_mib = 4096,
					   .max_disk_mib = SPEC_DISK_MAX_MIB,
					   .idle_timeout_default_s = 300 };

static void check_err(const struct api_err *e)
{
	FUZZ_ASSERT(e->code >= API_E_BAD_JSON && e->code <= API_E_TOO_LARGE);
	FUZZ_ASSERT(e->msg[0] && memchr(e->msg, 0, sizeof(e->msg)));
}

static int has_any(const char *s, const char *bad)
{
	return s[strcspn(s, bad)] != '\0';
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static void check_guest_path(const char *p)
{
	FUZZ_ASSERT(!p || (p[0] == '/' && strlen(p) <= AGENT_PATH_MAX));
}

/* What the spec's names may hold where they end up (names.h). */
static void check_sandbox(const struct sandbox_spec *s, const struct sandbox_limits *l)
{
	const char *k;
	json_t *v;

	FUZZ_ASSERT(image_name_valid(s->image) && !has_any(s->image, " \"',:/"));
	FUZZ_ASSERT(hostname_valid(s->hostname) && !has_any(s->hostname, " \"'\\=,:"));
	FUZZ_ASSERT(s->cpus >= 1 && s->cpus <= l->max_cpus);
	FUZZ_ASSERT(s->memory_mib >= SPEC_MEM_MIN_MIB && s->memory_mib <= l->max_memory_mib);
	FUZZ_ASSERT(s->nshares <= SPEC_MAX_SHARES && s->timeout_s <= SPEC_TIMEOUT_MAX_S);
	FUZZ_ASSERT(s->idle_timeout_s <= SPEC_TIMEOUT_MAX_S);
	FUZZ_ASSERT(!s->firewall || s->network == SANDBOX_NET_PASST);
	/* The cgroup's limits: never below the guest's RAM plus the floor, never unbounded. */
	FUZZ_ASSERT(s->limits.memory_max_mib >= (uint64_t)s->memory_mib + CG_MEMORY_FLOOR_MIB &&
		    s->limits.memory_max_mib <= CG_MEMORY_MAX_MIB);
	FUZZ_ASSERT(s->limits.pids_max >= CG_PIDS_FLOOR + s->cpus &&
		    s->limits.pids_max <= CG_PIDS_MAX);
	FUZZ_ASSERT(s->limits.cpu_max_centi >= 1 && s->limits.cpu_max_centi <= CG_CPU_MAX_CENTI);
	for (size_t i = 0; i < s->nshares; i++) {
		FUZZ_ASSERT(s->shares[i].host_path[0] == '/' &&
			    !has_control(s->shares[i].host_path));
		FUZZ_ASSERT(s->shares[i].guest_path[0] == '/' &&
			    !has_any(s->shares[i].guest_path, " \"'\\=,:"));
		FUZZ_ASSERT(strcmp(s->shares[i].guest_path, "/"));
	}
	FUZZ_ASSERT(json_is_object(s->env) && json_object_size(s->env) <= SPEC_ENV_MAX);
	json_object_foreach(s->env, k, v) FUZZ_ASSERT(k[0] && !strchr(k, '=') && json_is_string(v));
	FUZZ_ASSERT(json_is_object(s->labels) && json_object_size(s->labels) <= SPEC_LABELS_MAX);
	json_object_foreach(s->labels, k, v)
		FUZZ_ASSERT(label_key_valid(k) && !has_any(k, " \"',:=") && json_is_string(v));
}

/* Rendered and parsed again, a spec is the same spec. */
static void check_sandbox_roundtrip(const struct sandbox_spec *s)
{
	struct sandbox_spec again = { 0 };
	struct api_err e = { 0 };
	json_t *j = sandbox_spec_to_json(s), *j2;

	if (!j)
		return;
	FUZZ_ASSERT(sandbox_spec_parse(j, &lim, &again, &e) == 0);
	j2 = sandbox_spec_to_json(&again);
	FUZZ_ASSERT(j2 && json_equal(j, j2));
	json_decref(j);
	json_decref(j2);
	sandbox_spec_free(&again);
}

static void check_exec(const struct exec_spec *x, bool streaming)
{
	FUZZ_ASSERT(x->argc >= 1 && x->argc <= AGENT_ARGV_MAX && x->argv && !x->argv[x->argc]);
	for (size_t i = 0; i < x->argc; i++)
		FUZZ_ASSERT(x->argv[i]);
	FUZZ_ASSERT(x->output_cap <=
		    (streaming ? AGENT_OUTPUT_CAP_MAX : EXEC_OUTPUT_CAP_BUFFERED_MAX));
	FUZZ_ASSERT(x->timeout_ms <= AGENT_TIMEOUT_MAX_MS);
	FUZZ_ASSERT(!x->stdin_len || x->stdin_data);
	check_guest_path(x->cwd);
	/* A confined exec's cwd is one the agent accepts for it. */
	FUZZ_ASSERT(!x->confine || agent_confine_cwd_ok(x->cwd));
}

/* The environment merge, against a sandbox environment. */
static void merge(struct exec_spec *x)
{
	struct kiln_exec_opts o;
	struct api_err e = { 0 };
	json_t *base = json_pack("{ssss}", "PATH", "/bin", "HOME", "/root");

	if (exec_env_merge(x, base, &e)) {
		check_err(&e);
	} else {
		/* The agent gets each variable once, a name without '=' (it
		 * would split "A=B" differently from the client's intent). */
		FUZZ_ASSERT(x->nmerged <= AGENT_ENV_MAX);
		for (size_t i = 0; i < x->nmerged; i++) {
			FUZZ_ASSERT(x->merged[i].key[0] && !strchr(x->merged[i].key, '='));
			for (size_t j = 0; j < i && x->nmerged <= 64; j++)
				FUZZ_ASSERT(strcmp(x->merged[i].key, x->merged[j].key));
		}
		exec_spec_opts(x, &o);
		/* libkiln's form: each variable once more, "K=V" or a bare "K". */
		for (size_t i = 0; i < x->nmerged; i++)
			FUZZ_ASSERT(o.env && o.env[i] &&
				    !strncmp(o.env[i], x->merged[i].key, strlen(x->merged[i].key)));
		FUZZ_ASSERT(!x->nmerged || !o.env[x->nmerged]);
	}
	json_decref(base);
}

/* A pool made from cfg serves the create s only when it shapes the same VM. */
static void check_pool_fit(const struct sandbox_spec *s, const struct pool_cfg *cfg)
{
	json_t *pb = pool_cfg_body(cfg);
	struct sandbox_spec pool = { 0 };
	struct api_err e = { 0 };
	const char *why = NULL;

	if (pb && sandbox_spec_parse(pb, &lim, &pool, &e) == 0) {
		if (pool_spec_fits(&pool, s, &why)) {
			FUZZ_ASSERT(!why && !strcmp(pool.image, s->image) && pool.cpus == s->cpus);
			FUZZ_ASSERT(pool.memory_mib == s->memory_mib && pool.network == s->network);
			FUZZ_ASSERT(!s->nshares && s->console == pool.console && !s->firewall);
		} else {
			FUZZ_ASSERT(why && why[0]);
		}
	}
	sandbox_spec_free(&pool);
	json_decref(pb);
}

static int fuzz_sandbox(const json_t *body, struct api_err *e)
{
	static const struct pool_cfg pools[] = {
		{ .image = "m", .size = 1 },
		{ .image = "minimal",
		  .size = 4,
		  .cpus = 2,
		  .memory_mib = 256,
		  .network = SANDBOX_NET_PASST },
	};
	struct sandbox_spec s = { 0 };

	if (sandbox_spec_parse(body, &lim, &s, e))
		return -1;
	check_sandbox(&s, &lim);
	check_sandbox_roundtrip(&s);
	for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
		check_pool_fit(&s, &pools[i]);
	sandbox_spec_free(&s);
	return 0;
}

/* A --pool argument (the input's bytes up to a NUL). */
static void fuzz_pool_arg(const uint8_t *data, size_t size)
{
	char arg[POOL_ARG_MAX + 8];
	struct err err;
	size_t n = size < sizeof(arg) - 1 ? size : sizeof(arg) - 1;
	struct sandbox_spec s = { 0 };
	struct pool_cfg c;
	struct api_err e = { 0 };
	json_t *b;

	memcpy(arg, data, n);
	arg[n] = '\0';
	err.msg[0] = '\0';
	if (pool_cfg_parse(arg, &c, &err)) {
		FUZZ_ASSERT(err.msg[0] && memchr(err.msg, 0, sizeof(err.msg)));
		return;
	}
	FUZZ_ASSERT(image_name_valid(c.image) && c.size >= 1 && c.size <= POOL_SIZE_MAX);
	FUZZ_ASSERT(c.cpus <= 64 && (!c.memory_mib || c.memory_mib >= SPEC_MEM_MIN_MIB));
	b = pool_cfg_body(&c);
	if (b && sandbox_spec_parse(b, &lim, &s, &e) == 0) {
		/* A pool serves the creates of its own body. */
		FUZZ_ASSERT(pool_spec_fits(&s, &s, NULL));
		check_sandbox(&s, &lim);
	} else if (b) {
		check_err(&e); /* beyond this daemon's limits: kilnd refuses to start */
	}
	sandbox_spec_free(&s);
	json_decref(b);
}

static int fuzz_exec(json_t *body, bool streaming, struct api_err *e)
{
	struct exec_spec x = { 0 };
	int r = exec_spec_parse(body, streaming, &x, e);

	if (!r) {
		check_exec(&x, streaming);
		merge(&x);
	}
	exec_spec_free(&x);
	return r;
}

static int fuzz_proc(json_t *body, bool shell, struct api_err *e)
{
	struct proc_spec s = { 0 };
	struct kiln_exec_opts o;
	int r = shell ? proc_shell_parse(body, &s, e) : proc_spec_parse(body, &s, e);

	if (!r) {
		check_exec(&s.x, true);
		FUZZ_ASSERT(!s.ring_bytes ||
			    (s.ring_bytes >= AGENT_RING_MIN && s.ring_bytes <= AGENT_RING_MAX));
		merge(&s.x);
		proc_spec_opts(&s, &o);
	}
	proc_spec_free(&s);
	return r;
}

static int fuzz_files(unsigned which, const json_t *body, struct api_err *e)
{
	switch (which) {
	case 0: {
		struct mkdir_spec s;

		if (mkdir_spec_parse(body, &s, e))
			return -1;
		check_guest_path(s.path);
		FUZZ_ASSERT(s.path && s.mode >= -1 && s.mode <= 07777);
		return 0;
	}
	case 1: {
		struct remove_spec s;

		if (remove_spec_parse(body, &s, e))
			return -1;
		FUZZ_ASSERT(s.path);
		check_guest_path(s.path);
		return 0;
	}
	case 2: {
		struct rename_spec s;

		if (rename_spec_parse(body, &s, e))
			return -1;
		FUZZ_ASSERT(s.from && s.to);
		check_guest_path(s.from);
		check_guest_path(s.to);
		return 0;
	}
	default: {
		struct port_spec s;

		if (port_spec_parse(body, &s, e))
			return -1;
		FUZZ_ASSERT(s.guest_port >= 1 && s.guest_port <= 65535);
		FUZZ_ASSERT(s.target == PORT_TARGET_TCP ? s.guest_address &&
					    (!strcmp(s.guest_address, "127.0.0.1") ||
					     !strcmp(s.guest_address, "::1"))
							: !s.guest_address);
		FUZZ_ASSERT(s.target != PORT_TARGET_VSOCK || s.guest_port != AGENT_PORT);
		return 0;
	}
	}
}

static int fuzz_firewall(const json_t *body, struct api_err *e)
{
	json_t *canon = NULL, *again = NULL;
	struct api_err e2 = { 0 };
	char *line;

	if (firewall_rules_canon(body, &canon, e))
		return -1;
	FUZZ_ASSERT(canon && json_is_object(canon) && json_object_get(canon, "dns"));
	FUZZ_ASSERT(firewall_rules_canon(canon, &again, &e2) == 0 && json_equal(canon, again));
	line = firewall_rules_line(canon, &e2);
	FUZZ_ASSERT(!line || !strchr(line, '\n'));
	free(line);
	json_decref(again);
	json_decref(canon);
	return 0;
}

static int fuzz_checkpoint(unsigned which, const json_t *body, struct api_err *e)
{
	char id[SANDBOX_ID_LEN + 1], name[CHECKPOINT_NAME_MAX + 1];

	if (which == 0) {
		struct checkpoint_req r;

		if (checkpoint_req_parse(body, &r, e))
			return -1;
		FUZZ_ASSERT(checkpoint_name_valid(r.name) && !has_any(r.name, " \"',:/"));
		return 0;
	}
	if (fork_ref_parse(body, id, name, e))
		return -1;
	FUZZ_ASSERT(sandbox_id_valid(id) && checkpoint_name_valid(name));
	{
		/* The source: a sandbox made from the smallest create body. */
		json_t *src_body = json_pack("{ss}", "image", "base");
		struct sandbox_spec src = { 0 }, fork = { 0 };
		struct sandbox_limits small = { .max_cpus = 1,
						.max_memory_mib = 128,
						.max_disk_mib = SPEC_DISK_MAX_MIB };
		bool given = false;
		int r;

		FUZZ_ASSERT(src_body && sandbox_spec_parse(src_body, &small, &src, e) == 0);
		r = fork_spec_parse(body, &src, &small, &fork, &given, e);
		if (!r) {
			check_sandbox(&fork, &small);
			FUZZ_ASSERT(!strcmp(fork.image, src.image) && fork.cpus == src.cpus);
			FUZZ_ASSERT(fork.memory_mib == src.memory_mib &&
				    fork.nshares == src.nshares);
			FUZZ_ASSERT(given || !strcmp(fork.hostname, src.hostname));
		}
		sandbox_spec_free(&fork);
		sandbox_spec_free(&src);
		json_decref(src_body);
		return r;
	}
}

static int fuzz_fields(const json_t *body, struct api_err *e)
{
	static const char *const allowed[] = { "a", "b", "c", NULL };
	uint64_t u = 0;
	bool b;
	const char *s = NULL;

	if (json_fields_only(body, allowed, "fuzz", e))
		return -1;
	if (json_fields_uint(body, "a", false, 3, 1000, 7, &u, "fuzz", e))
		return -1;
	FUZZ_ASSERT(u >= 3 && u <= 1000);
	if (json_fields_bool(body, "b", false, &b, "fuzz", e))
		return -1;
	if (json_fields_string(body, "c", true, 8, &s, "fuzz", e))
		return -1;
	FUZZ_ASSERT(s && strlen(s) <= 8);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_err e = { 0 };
	json_t *body;
	unsigned sel;
	int r = 0;

	if (size < 1)
		return 0;
	sel = data[0] % 19;
	if (sel == 18) {
		fuzz_pool_arg(data + 1, size - 1);
		return 0;
	}
	body = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
	if (!body)
		return 0;
	switch (sel) {
	case 0:
		r = fuzz_sandbox(body, &e);
		break;
	case 1: {
		int grace = -1;

		r = sandbox_stop_body_parse(body, &grace, &e);
		FUZZ_ASSERT(r || (grace >= 0 && grace <= 60000));
		break;
	}
	case 2:
		r = sandbox_start_body_parse(body, &e);
		break;
	case 3:
		r = fuzz_exec(body, false, &e);
		break;
	case 4:
		r = fuzz_exec(body, true, &e);
		break;
	case 5:
		r = fuzz_proc(body, false, &e);
		break;
	case 6:
		r = fuzz_proc(body, true, &e);
		break;
	case 7: {
		int signo = 0;
		bool group;

		r = proc_signal_parse(body, &signo, &group, &e);
		FUZZ_ASSERT(r || (signo >= 1 && signo <= 64));
		break;
	}
	case 8: {
		uint16_t rows = 0, cols = 0;

		r = proc_resize_parse(body, &rows, &cols, &e);
		FUZZ_ASSERT(r || (rows >= 1 && cols >= 1));
		break;
	}
	case 9:
	case 10:
	case 11:
	case 12:
		r = fuzz_files(sel - 9, body, &e);
		break;
	case 13:
		r = fuzz_firewall(body, &e);
		break;
	case 14:
	case 15:
		r = fuzz_checkpoint(sel - 14, body, &e);
		break;
	case 16:
		r = fuzz_fields(body, &e);
		break;
	default: {
		/* A share or fork body given as the whole create body. */
		json_t *wrap = json_pack("{sssO}", "image", "m", "shares", body);

		if (wrap)
			r = fuzz_sandbox(wrap, &e);
		json_decref(wrap);
		break;
	}
	}
	if (r) {
		FUZZ_ASSERT(r == -1);
		check_err(&e);
	}
	json_decref(body);
	return 0;
}
