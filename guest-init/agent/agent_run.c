/*
 * run (docs/agent-protocol.md, section 7.3.1): code in a language, with a
 * structured result. The agent writes its language helpers (guest-init/
 * agent/run/, built into kiln-init) to /run/kiln-run at first use, the
 * code to a fresh directory beside them, and an empty result file owned by
 * the run's user; then it runs the interpreter through exec's own path
 * (agent_exec_run: same stdin, output, cap, timeout and kill rules), so
 * options added to exec's launch (such as confinement) apply to run too.
 * After the exit it sends the result file back as a `result` message,
 * read through the descriptor it created the file with, and removes the
 * directory.
 *
 * Why the directory is root's and not the user's: the user's code can
 * write the result file but cannot replace it with a link or a FIFO, nor
 * leave anything else behind; the agent never opens a path the code could
 * have changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest-init/agent/agent_env.h"
#include "guest-init/agent/agent_launch.h"
#include "guest-init/agent/agent_serve.h"
#include "guest-init/agent/confine_plan.h"
#include "lib/base/fd_io.h"

#define RUN_DIR CONFINE_RUN_DIR

/* The helpers, as they are in guest-init/agent/run/ (NUL-terminated). */
__asm__(".section .rodata\n"
	".balign 16\n"
	"kiln_run_py:\n.incbin \"guest-init/agent/run/run.py\"\n.byte 0\n"
	"kiln_run_prelude_js:\n.incbin \"guest-init/agent/run/prelude.js\"\n.byte 0\n"
	"kiln_run_result_sh:\n.incbin \"guest-init/agent/run/result.sh\"\n.byte 0\n"
	".previous\n");
extern const char kiln_run_py[], kiln_run_prelude_js[], kiln_run_result_sh[];

struct run_lang {
	const char *runtime;   /* must be in PATH */
	const char *runtime2;  /* also needed, or NULL */
	const char *fallback;  /* used instead of runtime when that is missing, or NULL */
	const char *code_name; /* the code file's name (its extension picks the loader) */
};

/* bash falls back to sh: busybox's ash (the minimal image) runs the
 * helper, which keeps to what both shells share. */
static const struct run_lang langs[AGENT_LANG_COUNT] = {
	[AGENT_LANG_PYTHON] = { "python3", NULL, NULL, "main.py" },
	[AGENT_LANG_JAVASCRIPT] = { "node", NULL, NULL, "main.js" },
	[AGENT_LANG_TYPESCRIPT] = { "node", "esbuild", NULL, "main.ts" },
	[AGENT_LANG_BASH] = { "bash", NULL, "sh", "main.sh" },
};

struct run_ctx {
	int dir_fd; /* the run's directory */
	char dir[64];
	int result_fd; /* the result file, as the agent created it */
	bool made;     /* dir exists */
	const char *code_name;
};

/* Write a whole file as root (0644), atomically: a concurrent run sees
 * the old helper or the new one, never half of one. */
static int put_file(const char *dir, const char *name, const void *data, size_t n, bool if_same)
{
	char path[128], tmp[160];
	struct stat st;
	int fd, r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (if_same && lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == n &&
	    st.st_uid == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", dir, name, (long)gettid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = fd_io_write_all(fd, data, n);
	if (r == 0 && fchmod(fd, 0644) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* /run/kiln-run and the helpers, written once per boot (and again if
 * something changed them). */
static int helpers_ready(void)
{
	static const struct {
		const char *name;
		const char *text;
	} files[] = {
		{ "run.py", kiln_run_py },
		{ "prelude.js", kiln_run_prelude_js },
		{ "result.sh", kiln_run_result_sh },
	};
	struct stat st;
	int r;

	if (mkdir(RUN_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(RUN_DIR, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
		return -ENOTDIR;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		r = put_file(RUN_DIR, files[i].name, files[i].text, strlen(files[i].text), true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* True when `name` is in the PATH the process will get. */
static bool have_runtime(const struct agent_proc_req *req, const char *name)
{
	char **envp, out[AGENT_PATH_MAX + 1];
	const char *cwd = req->cwd ? req->cwd : "/";
	bool ok;

	if (agent_env_build(req, false, false, &envp) < 0)
		return true; /* let the launch report it */
	ok = agent_path_search(name, agent_env_get(envp, "PATH"), cwd, agent_launch_is_exec_file,
			       NULL, out, sizeof(out)) == 0;
	free(envp);
	return ok;
}

/* The run's directory (root's, 0755) with the code (root's, 0644) and an
 * empty result file (the user's, 0600). */
static int make_run_dir(struct run_ctx *x, const struct agent_proc_req *req, const uint8_t *code)
{
	static const char tmpl[] = RUN_DIR "/r.XXXXXX";
	int r;

	memcpy(x->dir, tmpl, sizeof(tmpl));
	if (!mkdtemp(x->dir))
		return -errno;
	x->made = true;
	if (chmod(x->dir, 0755) < 0)
		return -errno;
	x->dir_fd = open(x->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x->dir_fd < 0)
		return -errno;
	r = put_file(x->dir, x->code_name, code, req->code_len, false);
	if (r < 0)
		return r;
	x->result_fd = openat(x->dir_fd, "result.json",
			      O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (x->result_fd < 0)
		return -errno;
	if (fchown(x->result_fd, agent_user_uid(req->user), agent_user_gid(req->user)) < 0)
		return -errno;
	return 0;
}

static void remove_run_dir(struct run_ctx *x)
{
	if (x->result_fd >= 0)
		close(x->result_fd);
	if (x->dir_fd >= 0) {
		unlinkat(x->dir_fd, "result.json", 0);
		unlinkat(x->dir_fd, x->code_name, 0);
		close(x->dir_fd);
	}
	/* Fails, and leaves the directory, only if root's code put
	 * something there. */
	if (x->made)
		rmdir(x->dir);
}

/* Before `exit`: the result file's bytes, or only its size past the cap. */
static int send_result(void *arg, struct agent_conn *c)
{
	struct run_ctx *x = arg;
	struct agent_line l;
	struct stat st;
	uint8_t *buf = NULL;
	size_t size = 0, n = 0;
	ssize_t got;
	int r;

	if (fstat(x->result_fd, &st) == 0 && st.st_size > 0)
		size = (size_t)st.st_size;
	if (size && size <= AGENT_RUN_RESULT_MAX && (buf = malloc(size))) {
		/* The code may still be writing (a leftover child): take what
		 * is there now, the host validates it. */
		while (n < size && (got = pread(x->result_fd, buf + n, size - n, (off_t)n)) > 0)
			n += (size_t)got;
	}
	r = agent_line_result(&l, size, n);
	if (r == 0)
		r = agent_conn_send(c, &l, buf, n);
	agent_line_free(&l);
	free(buf);
	return r;
}

/* The interpreter's argv, and req's env with room for the variable run
 * adds after it (later entries win). */
static int run_command(struct agent_proc_req *req, const struct run_ctx *x, const char *shell,
		       char *code_path, size_t code_path_len, struct agent_env **env_out)
{
	/* -u: output reaches a streaming client as it is printed. */
	static const char *argv_py[] = { "python3", "-u", RUN_DIR "/run.py", NULL, NULL };
	static const char *argv_js[] = { "node", "--require", RUN_DIR "/prelude.js", NULL, NULL };
	/* The code is sourced after the helper, as $0 (so it reads like a
	 * script's); errors name its file and line. */
	const char *argv_sh[] = { shell, "-c", ". " RUN_DIR "/result.sh && . \"$0\"", NULL, NULL };
	struct agent_env *env = calloc(req->envc + 1, sizeof(*env));
	const char **argv, **src;
	size_t n = 0;

	if (!env)
		return -ENOMEM;
	snprintf(code_path, code_path_len, "%s/%s", x->dir, x->code_name);
	src = req->lang == AGENT_LANG_PYTHON   ? argv_py
		: req->lang == AGENT_LANG_BASH ? argv_sh
					       : argv_js;
	while (src[n])
		n++;
	argv = calloc(n + 2, sizeof(*argv));
	if (!argv) {
		free(env);
		return -ENOMEM;
	}
	memcpy(argv, src, n * sizeof(*argv));
	argv[n] = code_path;
	req->argv = argv;
	req->argc = n + 1;
	memcpy(env, req->env, req->envc * sizeof(*env));
	*env_out = env;
	return 0;
}

void agent_serve_run(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_proc_req req = m->u.proc;
	struct run_ctx x = { .dir_fd = -1, .result_fd = -1 };
	const struct run_lang *lang = &langs[req.lang];
	const char *lname = agent_lang_name(req.lang), *runtime = lang->runtime;
	char code_path[sizeof(x.dir) + 16], result_path[sizeof(x.dir) + 16];
	struct agent_env *env = NULL;
	size_t in_len = (size_t)m->len;
	uint8_t *in;
	size_t envc;
	int r;

	x.code_name = lang->code_name;
	if (agent_exec_payload(c, m, &in) < 0)
		return;
	if (!have_runtime(&req, runtime) && lang->fallback && have_runtime(&req, lang->fallback))
		runtime = lang->fallback;
	if (!have_runtime(&req, runtime) ||
	    (lang->runtime2 && !have_runtime(&req, lang->runtime2))) {
		const char *need = have_runtime(&req, runtime) ? lang->runtime2 : runtime;

		agent_reply_error(
			c, AGENT_E_NOT_FOUND,
			"run: language \"%s\" needs %s in the image: use the debian image (or install %s)",
			lname, need, need);
		free(in);
		return;
	}
	r = helpers_ready();
	if (r == 0)
		r = make_run_dir(&x, &req, in);
	if (r == 0)
		r = run_command(&req, &x, runtime, code_path, sizeof(code_path), &env);
	if (r < 0) {
		agent_reply_error(c, agent_errno_code(-r), "run: cannot prepare the code in %s: %s",
				  x.dir[0] ? x.dir : RUN_DIR, strerror(-r));
		remove_run_dir(&x);
		free(in);
		return;
	}
	/* The code is on disk; what follows it in the payload is stdin. */
	envc = req.envc;
	snprintf(result_path, sizeof(result_path), "%s/result.json", x.dir);
	env[envc++] = (struct agent_env){ "KILN_RESULT_FILE", result_path };
	req.env = env;
	req.envc = envc;
	req.run_dir = x.dir; /* a confined run sees this run's directory only */
	if (req.code_len) {
		memmove(in, in + req.code_len, in_len - req.code_len);
		in_len -= req.code_len;
	}
	if (!in_len) {
		free(in);
		in = NULL;
	}
	agent_exec_run(a, c, &req, in, in_len, send_result, &x);
	remove_run_dir(&x);
	free((void *)req.argv);
	free(env);
}
