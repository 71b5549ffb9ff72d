/*
 * POST /v1/templates?name=NAME (docs/api.md, "Templates"): the body, the
 * build context as tar.gz, is streamed to a file in a work directory
 * (never held in memory; --max-image); the build file is read from it
 * and checked whole, with FROM resolved and every step's cache key
 * derived, before anything boots (a refusal is a plain 4xx). Then the
 * build runs on a stream job (stream_job.h) whose NDJSON lines are the
 * log: one line per step start, cached step, output chunk (exec's
 * stdout/stderr events) and step end, then a result or error line.
 * GET /v1/templates, GET and DELETE /v1/templates/{name}.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/images/build_context.h"
#include "api/kilnd/http/stream_job.h"
#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/images/images.h"
#include "api/kilnd/registry/sandbox_record.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/images/templates.h"
#include "lib/base/base64.h"
#include "lib/base/fd_io.h"
#include "lib/base/json_text.h"
#include "lib/base/mono.h"
#include "lib/base/utf8.h"

#define BUILD_QUEUE_BYTES (256u << 10)
/* A RUN step may take this long (the guest kills it then). */
#define BUILD_STEP_TIMEOUT_MS (3600u * 1000)
/* One READY attempt; between attempts. */
#define READY_TRY_MS 10000
#define READY_PAUSE_MS 500

struct build_job {
	struct stream_job sj; /* first: the job is freed through it */
	struct kilnd *d;
	char name[IMAGE_NAME_MAX + 1];
	char work[PATH_MAX];
	int fd;  /* the context archive */
	int err; /* the first write error of the upload */
	bool began;
	struct template_build_query q;
	char file[4097];
	struct build_context ctx;
	struct buildfile bf;
	char (*keys)[BUILDFILE_KEY_LEN + 1];
	/* FROM */
	bool base_template;
	char base_sb[SANDBOX_ID_LEN + 1];
	json_t *base_defaults; /* {"env","working_dir","user"} of the image or template */
	json_t *spec;          /* the build sandbox's create body (an image base) */
	char from_digest[128];
	char from_key[256]; /* the FROM step's cache input: the digest and the build sandbox's shape */
	/* while building */
	struct sandbox *sb;
	kiln_agent *a; /* the build's own client of sb's agent */
	json_t *env;
	char cwd[BUILDFILE_PATH_MAX + 1];
	enum agent_user user;
	json_t *steps;
	unsigned step; /* 1-based, for messages */
	double t0;
};

static void job_cleanup_files(struct build_job *j)
{
	char p[PATH_MAX + 32];

	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	if (j->work[0]) {
		snprintf(p, sizeof(p), "%s/context.tar.gz", j->work);
		unlink(p);
		snprintf(p, sizeof(p), "%s/copy.tar", j->work);
		unlink(p);
		rmdir(j->work);
		j->work[0] = '\0';
	}
}

/*
 * The build is over: its slot (the name) is free and its hold on the
 * sandbox dropped before the last line (result or error) goes out, so a
 * client that reads that line and builds the name again at once is not
 * refused busy. After this the job touches only its own work directory.
 */
static void build_slot_release(struct build_job *j)
{
	kiln_agent_free(j->a);
	j->a = NULL;
	if (j->sb)
		sandbox_put(j->sb);
	j->sb = NULL;
	if (j->began)
		template_build_end(j->d, j->name);
	j->began = false;
}

static void job_free(struct build_job *j)
{
	job_cleanup_files(j);
	build_slot_release(j);
	build_context_free(&j->ctx);
	buildfile_free(&j->bf);
	free(j->keys);
	json_decref(j->base_defaults);
	json_decref(j->spec);
	json_decref(j->env);
	json_decref(j->steps);
	free(j);
}

static void build_release(struct stream_job *sj)
{
	job_free((struct build_job *)sj);
}

/* One log line (takes o); a client that went away does not stop the build. */
static void emit(struct build_job *j, json_t *o)
{
	char *line = o ? json_text(o, JSON_COMPACT) : NULL;

	if (line) {
		size_t len = strlen(line);

		line[len] = '\n'; /* the NUL becomes the line's end */
		byte_queue_push(&j->sj.q, line, len + 1);
	}
	free(line);
	json_decref(o);
}

static void emit_step(struct build_job *j, const char *type, size_t i, double ms)
{
	const struct bf_step *s = &j->bf.steps[i];
	json_t *o = json_pack("{s:s,s:I,s:I,s:s}", "type", type, "step", (json_int_t)(i + 1),
			      "line", (json_int_t)s->line, "instruction", s->text);

	if (o && ms >= 0)
		json_object_set_new(o, "ms", json_real(ms));
	emit(j, o);
}

/* ---- steps ---- */

/* A RUN step's output chunk: {"type":"stdout"|"stderr","step","data"}, or
 * data_base64 when the chunk is not UTF-8 text on its own. */
static int on_output(void *arg, enum kiln_stream st, const void *data, size_t n)
{
	struct build_job *j = arg;
	const char *type = st == KILN_STDERR ? "stderr" : "stdout";
	json_t *o;

	if (utf8_valid(data, n)) {
		o = json_pack("{s:s,s:I,s:s%}", "type", type, "step", (json_int_t)j->step, "data",
			      (const char *)data, n);
	} else {
		char *b = malloc(base64_encoded_size(n));

		if (!b)
			return -ENOMEM;
		base64_encode(data, n, b);
		o = json_pack("{s:s,s:I,s:s}", "type", type, "step", (json_int_t)j->step,
			      "data_base64", b);
		free(b);
	}
	if (!o)
		return -ENOMEM;
	emit(j, o);
	return 0;
}

/* argv in the guest with the build's env, cwd and user (root: as_root). */
static int guest_run(struct build_job *j, const char *const *argv, bool shell, bool as_root,
		     bool show, uint32_t timeout_ms, int *status, struct api_err *e)
{
	struct kiln_exec_opts o = {
		.size = sizeof(o),
		.argv = argv,
		.cwd = j->cwd,
		.flags = (shell ? KILN_AGENT_SHELL : 0) |
			(as_root || j->user == AGENT_USER_ROOT ? KILN_AGENT_AS_ROOT : 0) |
			(show ? 0 : KILN_AGENT_DISCARD),
		.timeout_ms = timeout_ms,
		.output_cap = show ? AGENT_OUTPUT_CAP_MAX : 0
	};
	struct kiln_exit_status st = { .size = sizeof(st) };
	char **env = calloc(json_object_size(j->env) + 1, sizeof(*env));
	const char *k;
	json_t *v;
	size_t n = 0;
	int r = -1;

	/* The ENV steps' variables as libkiln takes them, "NAME=VALUE". */
	json_object_foreach(j->env, k, v)
	{
		if (!env || asprintf(&env[n], "%s=%s", k, json_string_value(v)) < 0) {
			api_err_set(e, API_E_INTERNAL, "template build: out of memory");
			goto out;
		}
		n++;
	}
	o.env = (const char *const *)env;
	r = show ? kiln_agent_exec_stream(j->a, &o, on_output, j, &st)
		 : kiln_agent_exec(j->a, &o, &st, NULL, NULL, NULL, NULL);
	if (r)
		api_err_from_agent(e, j->a, "template build");
	else
		*status = st.signal ? 128 + st.signal : st.exit_code;
out:
	for (size_t i = 0; env && i < n; i++)
		free(env[i]);
	free(env);
	return r ? -1 : 0;
}

static int step_fail(struct api_err *e, const struct bf_step *s, const char *what, int status)
{
	api_err_set(e, API_E_BAD_REQUEST, "step at line %u (%s): %s exited with status %d", s->line,
		    buildfile_op_name(s->op), what, status);
	return -1;
}

static int run_step(struct build_job *j, const struct bf_step *s, struct api_err *e)
{
	const char **argv = calloc(s->argc + 1, sizeof(char *));
	int status = 0, r;

	if (!argv) {
		api_err_set(e, API_E_INTERNAL, "template build: out of memory");
		return -1;
	}
	for (size_t i = 0; i < s->argc; i++)
		argv[i] = s->argv[i];
	r = guest_run(j, argv, s->shell, false, true, BUILD_STEP_TIMEOUT_MS, &status, e);
	free(argv);
	if (r == 0 && status)
		return step_fail(e, s, "RUN", status);
	return r;
}

static int mkdir_p(struct build_job *j, const char *dir, struct api_err *e)
{
	const char *argv[] = { "mkdir", "-p", "--", dir, NULL };
	char cwd[sizeof(j->cwd)];
	int status = 0, r;

	/* From "/": what it makes may be the working directory itself (WORKDIR). */
	memcpy(cwd, j->cwd, sizeof(cwd));
	snprintf(j->cwd, sizeof(j->cwd), "/");
	r = guest_run(j, argv, false, true, false, 60000, &status, e);
	memcpy(j->cwd, cwd, sizeof(cwd));
	if (r)
		return -1;
	if (status) {
		api_err_set(e, API_E_BAD_REQUEST,
			    "step %u: mkdir -p %s in the guest failed (status %d)", j->step, dir,
			    status);
		return -1;
	}
	return 0;
}

/* The COPY archive's bytes from its file, for the upload. */
static long file_source(void *arg, void *buf, size_t n)
{
	return (long)fd_io_read_some(*(int *)arg, buf, n, NULL);
}

static int copy_step(struct build_job *j, const struct bf_step *s, struct api_err *e)
{
	char p[PATH_MAX + 32], target[BUILDFILE_PATH_MAX + 1];
	struct kiln_tar_stats st = { .size = sizeof(st) };
	int out, r;

	snprintf(p, sizeof(p), "%s/copy.tar", j->work);
	out = open(p, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		api_err_set(e, API_E_IO_ERROR, "COPY: create %s: %s", p, strerror(errno));
		return -1;
	}
	r = build_context_copy_tar(j->fd, &j->ctx, s, out, target, sizeof(target), e);
	if (r == 0 && lseek(out, 0, SEEK_SET) < 0) {
		api_err_set(e, API_E_IO_ERROR, "COPY: %s: %s", p, strerror(errno));
		r = -1;
	}
	if (r == 0)
		r = mkdir_p(j, target, e);
	if (r == 0 &&
	    kiln_agent_tar_upload_cb(j->a, target, KILN_AGENT_AS_ROOT, file_source, &out, &st)) {
		api_err_from_agent(e, j->a, "COPY into the guest");
		r = -1;
	}
	close(out);
	unlink(p);
	if (r == 0 && s->chown == 1) {
		/* --chown=user: what was copied, and the destination directory. */
		const char *argv[] = { "chown", "-R", "1000:1000", "--", target, NULL };
		int status = 0;

		if (guest_run(j, argv, false, true, false, 600000, &status, e))
			return -1;
		if (status)
			return step_fail(e, s, "chown", status);
	}
	if (r == 0)
		emit(j,
		     json_pack("{s:s,s:I,s:s,s:I,s:I}", "type", "copied", "step",
			       (json_int_t)j->step, "target", target, "files", (json_int_t)st.files,
			       "dirs", (json_int_t)st.dirs));
	return r;
}

/* READY: the command until it succeeds or the step's timeout passed. */
static int ready_step(struct build_job *j, const struct bf_step *s, struct api_err *e)
{
	const char **argv = calloc(s->argc + 1, sizeof(char *));
	int64_t deadline = mono_ms() + (int64_t)s->timeout_s * 1000;
	int status = -1, tries = 0, r = 0;

	if (!argv) {
		api_err_set(e, API_E_INTERNAL, "template build: out of memory");
		return -1;
	}
	for (size_t i = 0; i < s->argc; i++)
		argv[i] = s->argv[i];
	for (;;) {
		int64_t left = deadline - mono_ms();

		tries++;
		r = guest_run(j, argv, s->shell, false, false,
			      left < READY_TRY_MS ? (left > 1000 ? (uint32_t)left : 1000)
						  : READY_TRY_MS,
			      &status, e);
		if (r || status == 0 || mono_ms() + READY_PAUSE_MS >= deadline)
			break;
		usleep(READY_PAUSE_MS * 1000);
	}
	free(argv);
	if (r)
		return -1;
	emit(j,
	     json_pack("{s:s,s:I,s:I,s:I}", "type", "ready", "step", (json_int_t)j->step, "tries",
		       (json_int_t)tries, "exit_code", (json_int_t)status));
	if (status) {
		api_err_set(e, API_E_TIMEOUT,
			    "step at line %u (READY): the command did not succeed within %u s (%d tries, last status %d)",
			    s->line, s->timeout_s, tries, status);
		return -1;
	}
	return 0;
}

static int checkpoint(struct build_job *j, const char *name, struct api_err *e)
{
	struct checkpoint_req req = { .incremental = true };
	json_t *cp = NULL;
	int r;

	snprintf(req.name, sizeof(req.name), "%s", name);
	r = sandbox_checkpoint_create(j->sb, &req, &cp, e);
	json_decref(cp);
	return r;
}

/* The exec state after step s (ENV, WORKDIR, USER). */
static int apply_state(struct build_job *j, const struct bf_step *s)
{
	switch (s->op) {
	case BF_ENV:
		for (size_t k = 0; k < s->nenv; k++)
			if (json_object_set_new(j->env, s->env_keys[k],
						json_string(s->env_vals[k])))
				return -1;
		break;
	case BF_WORKDIR:
		snprintf(j->cwd, sizeof(j->cwd), "%s", s->arg);
		break;
	case BF_USER:
		j->user = strcmp(s->arg, "root") == 0 ? AGENT_USER_ROOT : AGENT_USER_USER;
		break;
	default:
		break;
	}
	return 0;
}

static int add_step(struct build_job *j, size_t i, const char *cp, bool cached)
{
	const struct bf_step *s = &j->bf.steps[i];

	return json_array_append_new(j->steps,
				     json_pack("{s:I,s:I,s:s,s:s,s:s,s:o,s:b}", "step",
					       (json_int_t)(i + 1), "line", (json_int_t)s->line,
					       "op", buildfile_op_name(s->op), "instruction",
					       s->text, "key", j->keys[i], "checkpoint",
					       cp ? json_string(cp) : json_null(), "cached",
					       cached));
}

/* The template's record once the build succeeded. */
static json_t *record(struct build_job *j)
{
	json_t *def =
		json_pack("{s:O,s:o,s:o}", "env", j->env, "working_dir",
			  j->cwd[0] && strcmp(j->cwd, "/") ? json_string(j->cwd) : json_null(),
			  "user",
			  j->bf.user || json_is_string(json_object_get(j->base_defaults, "user"))
				  ? json_string(j->user == AGENT_USER_ROOT ? "root" : "user")
				  : json_null());
	char created[40];

	format_time_ms(wall_ms(), created, sizeof(created));
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:f}", "name", j->name, "from",
			 j->bf.steps[0].arg, "from_kind", j->base_template ? "template" : "image",
			 "from_digest", j->from_digest, "sandbox", template_sandbox_id(j->sb),
			 "checkpoint", TEMPLATE_READY_CHECKPOINT, "defaults", def, "steps",
			 json_incref(j->steps), "buildfile", j->ctx.buildfile, "build_ms",
			 mono_ms_f() - j->t0, "created_at", created);
}

static void build_produce(struct stream_job *sj)
{
	struct build_job *j = (struct build_job *)sj;
	struct kilnd *d = j->d;
	char id[SANDBOX_ID_LEN + 1], cp[CHECKPOINT_NAME_MAX + 1], name[32];
	size_t n = j->bf.n, nkeys = n, hit = 0, start;
	bool cached = false;
	struct api_err e = { 0 };
	json_t *rec = NULL, *view = NULL, *last = NULL;
	int r = 0;

	j->t0 = mono_ms_f();
	j->steps = json_array();
	if (j->bf.steps[n - 1].op == BF_READY)
		nkeys--; /* READY's service is never cached: every build runs it */
	if (templates_cache_find(d, j->keys, nkeys, &hit, id, cp) == 0 && hit > 0)
		cached = true;
	/* The exec state the steps see: the base's, then the file's. */
	j->user = AGENT_USER_ROOT;
	snprintf(j->cwd, sizeof(j->cwd), "%s",
		 json_string_value(json_object_get(j->base_defaults, "working_dir")) ?: "/");
	if (json_is_string(json_object_get(j->base_defaults, "user")) &&
	    strcmp(json_string_value(json_object_get(j->base_defaults, "user")), "user") == 0)
		j->user = AGENT_USER_USER;
	j->step = 1;
	if (cached) {
		for (size_t i = 0; i <= hit; i++) {
			emit_step(j, "cached", i, -1);
			apply_state(j, &j->bf.steps[i]);
		}
		j->sb = template_sandbox_start(d, j->name, NULL, id, cp, &e);
		start = hit + 1;
	} else {
		emit_step(j, "step", 0, -1);
		j->sb = j->base_template
			? template_sandbox_start(d, j->name, NULL, j->base_sb,
						 TEMPLATE_READY_CHECKPOINT, &e)
			: template_sandbox_start(d, j->name, j->spec, NULL, NULL, &e);
		start = 1;
		if (j->sb)
			emit_step(j, "step_end", 0, mono_ms_f() - j->t0);
	}
	if (!j->sb) {
		r = -1;
		goto done;
	}
	if (kiln_agent_new(sandbox_vsock_path(j->sb), &j->a) < 0) {
		api_err_set(&e, API_E_INTERNAL, "template build: out of memory");
		r = -1;
		goto done;
	}
	if (cached) {
		/* This template keeps its own copy of the cached prefix. */
		snprintf(name, sizeof(name), "s%zu", hit + 1);
		if ((r = checkpoint(j, name, &e)))
			goto done;
		for (size_t i = 0; i <= hit && r == 0; i++)
			r = add_step(j, i, i == hit ? name : NULL, true);
	} else {
		r = add_step(j, 0, NULL, false);
	}
	for (size_t i = start; i < n && r == 0; i++) {
		const struct bf_step *s = &j->bf.steps[i];
		double t = mono_ms_f();

		j->step = (unsigned)(i + 1);
		emit_step(j, "step", i, -1);
		apply_state(j, s);
		switch (s->op) {
		case BF_RUN:
			r = run_step(j, s, &e);
			break;
		case BF_COPY:
			r = copy_step(j, s, &e);
			break;
		case BF_WORKDIR:
			r = mkdir_p(j, s->arg, &e);
			break;
		case BF_READY:
			r = ready_step(j, s, &e);
			break;
		default:
			break;
		}
		snprintf(name, sizeof(name), "s%zu", i + 1);
		if (r == 0 && buildfile_step_writes(s))
			r = checkpoint(j, name, &e);
		if (r == 0 && s->op != BF_READY)
			r = add_step(j, i, buildfile_step_writes(s) ? name : NULL, false);
		if (r == 0)
			emit_step(j, "step_end", i, mono_ms_f() - t);
	}
	if (r == 0) {
		/* The guest's dirty page cache onto its disk: a cold start from
		 * the template boots the checkpoint's disk copy, not its memory. */
		static const char *const sync_argv[] = { "sync", NULL };
		int status = 0;

		r = guest_run(j, sync_argv, false, true, false, 600000, &status, &e);
		if (r == 0 && status) {
			api_err_set(&e, API_E_INTERNAL,
				    "template build: sync in the guest exited with status %d",
				    status);
			r = -1;
		}
	}
	if (r == 0)
		r = checkpoint(j, TEMPLATE_READY_CHECKPOINT, &e);
	if (r == 0)
		r = sandbox_stop(j->sb, 0, "stopped", NULL, &e);
	if (r == 0) {
		rec = record(j);
		if (!rec) {
			api_err_set(&e, API_E_INTERNAL, "template build: out of memory");
			r = -1;
		}
	}
	if (r == 0)
		r = template_commit(d, rec, &e);
	if (r == 0 && templates_get(d, j->name, &view, &e) == 0)
		last = json_pack("{s:s,s:o}", "type", "result", "template", view);
done:
	json_decref(rec);
	if (r) {
		last = json_pack("{s:s,s:I,s:I,s:{s:s,s:s}}", "type", "error", "step",
				 (json_int_t)j->step, "line",
				 (json_int_t)(j->step <= n ? j->bf.steps[j->step - 1].line : 0),
				 "error", "code", api_code_name(e.code), "message", e.msg);
		kilnd_log("template %s: build failed at step %u: %s", j->name, j->step, e.msg);
		if (j->sb) {
			struct api_err de;

			if (sandbox_delete(j->sb, &de))
				kilnd_log("template %s: removing the build's sandbox: %s", j->name,
					  de.msg);
		}
	} else {
		kilnd_log("template %s: built in %.0f ms (%s)", j->name, mono_ms_f() - j->t0,
			  cached ? "a cached prefix reused" : "no step cached");
	}
	build_slot_release(j);
	if (r && !j->sj.q.pushed) {
		json_decref(last);
		j->sj.err = e;
		stream_job_close(&j->sj, -EIO);
	} else {
		emit(j, last);
		stream_job_close(&j->sj, 0);
	}
	job_cleanup_files(j);
}

/* ---- the request: upload, check, start ---- */

/* FROM: a template of that name, else an image. Sets the base and the
 * FROM step's cache input. */
static int resolve_from(struct build_job *j, struct api_err *e)
{
	const char *from = j->bf.steps[0].arg;
	struct sandbox_spec spec;
	struct api_err te;
	json_t *t = template_load(j->d, from, &te), *img = NULL;

	if (t) {
		j->base_template = true;
		snprintf(j->base_sb, sizeof(j->base_sb), "%s",
			 json_string_value(json_object_get(t, "sandbox")));
		snprintf(j->from_digest, sizeof(j->from_digest), "template:%s/%s", j->base_sb,
			 json_string_value(json_object_get(t, "created_at")) ?: "");
		j->base_defaults = json_incref(json_object_get(t, "defaults"));
		json_decref(t);
		/* the base sandbox (named by the digest) fixes the shape */
		snprintf(j->from_key, sizeof(j->from_key), "%s", j->from_digest);
		if (j->q.cpus || j->q.memory_mib || j->q.disk_mib) {
			api_err_set(e, API_E_BAD_FIELD,
				    "template build: cpus, memory_mib and disk_mib come from template '%s' (FROM): leave them out",
				    from);
			return -1;
		}
		return 0;
	}
	if (te.code != API_E_NOT_FOUND) {
		*e = te;
		return -1;
	}
	if (images_get(j->d, from, &img, e)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "build file line %u: FROM %s: no template or image of that name (GET /v1/templates, GET /v1/images)",
			    j->bf.steps[0].line, from);
		return -1;
	}
	snprintf(j->from_digest, sizeof(j->from_digest), "%s",
		 json_string_value(json_object_get(img, "digest")) ?: "unknown");
	json_decref(img);
	j->base_defaults = images_defaults(j->d, from);
	/* idle_timeout_s 0: no idle hibernation in the middle of a long step
	 * (its forks get the daemon's default, sandbox_from_template). */
	j->spec = json_pack("{s:s,s:i}", "image", from, "idle_timeout_s", 0);
	if (!j->spec ||
	    (j->q.cpus && json_object_set_new(j->spec, "cpus", json_integer(j->q.cpus))) ||
	    (j->q.memory_mib &&
	     json_object_set_new(j->spec, "memory_mib", json_integer(j->q.memory_mib))) ||
	    (j->q.disk_mib &&
	     json_object_set_new(j->spec, "disk_mib", json_integer(j->q.disk_mib)))) {
		api_err_set(e, API_E_INTERNAL, "template build: out of memory");
		return -1;
	}
	/* The shape the build sandbox gets (the daemon's defaults filled in)
	 * is part of the cache key: a cached prefix forks with its shape. */
	if (sandbox_spec_parse(j->spec, &j->d->cfg.limits, &spec, e))
		return -1;
	buildfile_from_input(j->from_digest, spec.cpus, spec.memory_mib, spec.disk_mib, j->from_key,
			     sizeof(j->from_key));
	sandbox_spec_free(&spec);
	return 0;
}

/* Parse, resolve and derive every key: everything that can be refused
 * without booting. */
static int build_check(struct build_job *j, struct api_err *e)
{
	const json_t *env;
	const char *wd;

	if (build_context_scan(j->fd, j->q.file ? j->file : NULL, j->d->cfg.max_image, &j->ctx,
			       e) ||
	    buildfile_parse(j->ctx.buildfile, j->ctx.buildfile_len, &j->bf, e) ||
	    resolve_from(j, e))
		return -1;
	/* FROM named the base: relative paths resolve against its working
	 * directory, as RUN runs there (the FROM key covers the base). */
	wd = json_string_value(json_object_get(j->base_defaults, "working_dir"));
	if (wd && strcmp(wd, "/") != 0) {
		buildfile_free(&j->bf);
		if (buildfile_parse_in(j->ctx.buildfile, j->ctx.buildfile_len, wd, &j->bf, e))
			return -1;
	}
	j->keys = calloc(j->bf.n, sizeof(*j->keys));
	env = json_object_get(j->base_defaults, "env");
	j->env = json_is_object(env) ? json_deep_copy(env) : json_object();
	if (!j->keys || !j->env) {
		api_err_set(e, API_E_INTERNAL, "template build: out of memory");
		return -1;
	}
	for (size_t i = 0; i < j->bf.n; i++) {
		const struct bf_step *s = &j->bf.steps[i];
		char digest[DIGEST_STR_LEN];
		const char *extra = NULL;

		if (s->op == BF_FROM)
			extra = j->from_key;
		if (s->op == BF_COPY) {
			if (build_context_copy_digest(&j->ctx, s, digest, e))
				return -1;
			extra = digest;
		}
		buildfile_step_key(i ? j->keys[i - 1] : "", s->canon, extra, j->keys[i]);
	}
	return 0;
}

static int build_data(struct http_req *r, const void *p, size_t n)
{
	struct build_job *j = r->up;

	if (j->err)
		return j->err;
	j->err = fd_io_write_all(j->fd, p, n);
	return j->err;
}

static void build_end(struct http_req *r, bool too_large)
{
	struct build_job *j = r->up;
	struct api_err e;

	r->up = NULL;
	if (too_large || j->err) {
		if (too_large)
			api_err_set(&e, API_E_BODY_TOO_LARGE,
				    "the build context is larger than %llu bytes (--max-image)",
				    (unsigned long long)r->d->cfg.max_image);
		else
			api_err_set(&e, j->err == -ENOSPC ? API_E_NO_SPACE : API_E_IO_ERROR,
				    "template build: writing the context to %s failed: %s", j->work,
				    strerror(-j->err));
		http_error(r, &e);
		job_free(j);
		return;
	}
	if (build_check(j, &e)) {
		http_error(r, &e);
		job_free(j);
		return;
	}
	kilnd_log("template %s: building (%zu steps, FROM %s)", j->name, j->bf.n,
		  j->bf.steps[0].arg);
	if (stream_job_init(&j->sj, BUILD_QUEUE_BYTES, build_produce, build_release)) {
		api_err_set(&e, API_E_INTERNAL, "template build: out of memory");
		http_error(r, &e);
		job_free(j);
		return;
	}
	stream_job_respond(r, &j->sj, "application/x-ndjson", false, "template build");
}

static void build_cancel(struct http_req *r)
{
	struct build_job *j = r->up;

	if (j)
		job_free(j);
	r->up = NULL;
}

static const struct http_upload_ops build_ops = { .data = build_data,
						  .end = build_end,
						  .cancel = build_cancel };

void handle_template_build_begin(struct http_req *r)
{
	struct build_job *j = calloc(1, sizeof(*j));
	char dir[PATH_MAX], p[PATH_MAX + 32];
	struct api_err e;

	if (!j) {
		api_err_set(&e, API_E_INTERNAL, "template build: out of memory");
		http_error(r, &e);
		return;
	}
	j->d = r->d;
	j->fd = -1;
	if (query_template_build(r->kv, r->nkv, &j->q, &e))
		goto fail;
	snprintf(j->name, sizeof(j->name), "%s", j->q.name);
	if (j->q.file)
		snprintf(j->file, sizeof(j->file), "%s", j->q.file);
	/* refused before a byte of the body is read */
	if (template_build_begin(r->d, j->name, &e))
		goto fail;
	j->began = true;
	if (http_room_check(r, "templates", "template build",
			    "the context and the re-pack of a COPY", &e))
		goto fail;
	if ((size_t)snprintf(dir, sizeof(dir), "%.4000s/templates", r->d->cfg.state_dir) >=
		    sizeof(dir) ||
	    (size_t)snprintf(j->work, sizeof(j->work), "%s/.build-XXXXXX", dir) >=
		    sizeof(j->work) ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST) || !mkdtemp(j->work)) {
		api_err_set(&e, API_E_IO_ERROR,
			    "template build: cannot make a work directory in %s: %s", dir,
			    strerror(errno));
		j->work[0] = '\0';
		goto fail;
	}
	snprintf(p, sizeof(p), "%s/context.tar.gz", j->work);
	j->fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (j->fd < 0) {
		api_err_set(&e, API_E_IO_ERROR, "template build: create %s: %s", p,
			    strerror(errno));
		goto fail;
	}
	http_upload(r, &build_ops, j);
	return;
fail:
	job_free(j);
	http_error(r, &e);
}

void handle_templates(struct http_req *r)
{
	struct api_err e;
	json_t *o;

	if (!http_no_query(r, "templates"))
		return;
	o = templates_list(r->d);
	if (!o) {
		api_err_set(&e, API_E_INTERNAL, "templates: out of memory");
		http_error(r, &e);
		return;
	}
	http_json(r, 200, o);
}

void handle_template_get(struct http_req *r)
{
	struct api_err e;
	json_t *o;

	if (!http_no_query(r, "template"))
		return;
	if (templates_get(r->d, r->rm.id, &o, &e))
		http_error(r, &e);
	else
		http_json(r, 200, o);
}

void handle_template_delete(struct http_req *r)
{
	struct api_err e;

	if (!http_no_query(r, "template delete"))
		return;
	if (templates_delete(r->d, r->rm.id, &e)) {
		http_error(r, &e);
		return;
	}
	kilnd_log("template %s: deleted", r->rm.id);
	http_no_content(r);
}
