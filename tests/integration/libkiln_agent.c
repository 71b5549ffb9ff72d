/*
 * libkiln_agent: the rest of libkiln's agent and VM API on a real guest,
 * built like examples/appliance.c against the installed library (see
 * libkiln_tests.sh). Prints "ok NAME" per check and "FAIL NAME: why" for
 * the first that fails; exit status 0 when all passed.
 *
 *   libkiln_agent --kernel K --initrd CPIO --workdir DIR --tar ARCHIVE
 *
 * ARCHIVE: a ustar archive holding a.txt ("from the host\n").
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kiln/kiln.h>

static int failed;

static void check(int ok, const char *name, const char *why)
{
	if (failed)
		return;
	if (ok) {
		printf("ok %s\n", name);
	} else {
		printf("FAIL %s: %s\n", name, why ? why : "");
		failed = 1;
	}
	fflush(stdout);
}

struct seen {
	char out[256], err[256];
};

static int on_output(void *arg, enum kiln_stream stream, const void *data, size_t n)
{
	struct seen *s = arg;
	char *b = stream == KILN_STDERR ? s->err : s->out;
	size_t have = strlen(b);

	if (n > sizeof(s->out) - 1 - have)
		n = sizeof(s->out) - 1 - have;
	memcpy(b + have, data, n);
	b[have + n] = '\0';
	return 0;
}

static void exec_stream(kiln_agent *a)
{
	const char *argv[] = { "echo to-stdout; echo to-stderr >&2; exit 3", NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv, .flags = KILN_AGENT_SHELL };
	struct kiln_exit_status st = { .size = sizeof(st) };
	struct seen s = { "", "" };
	int r = kiln_agent_exec_stream(a, &o, on_output, &s, &st);

	check(r == 0, "exec_stream runs", kiln_agent_errmsg(a));
	check(strcmp(s.out, "to-stdout\n") == 0 && strcmp(s.err, "to-stderr\n") == 0,
	      "exec_stream streams both", s.out);
	check(st.exit_code == 3, "exec_stream exit code", NULL);
}

static void exec_errors(kiln_agent *a)
{
	const char *argv[] = { "/no/such/program", NULL };
	const char *env_argv[] = { "echo $KILN_T", NULL };
	const char *env[] = { "KILN_T=from-env", NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv };
	struct kiln_exec_opts e = {
		.size = sizeof(e), .argv = env_argv, .env = env, .flags = KILN_AGENT_SHELL
	};
	char *out = NULL;
	int r = kiln_agent_exec(a, &o, NULL, NULL, NULL, NULL, NULL);

	check(r == -ENOENT && strlen(kiln_agent_errmsg(a)) > 0,
	      "exec of a missing program is -ENOENT", kiln_agent_errmsg(a));
	r = kiln_agent_exec(a, &e, NULL, &out, NULL, NULL, NULL);
	check(r == 0 && out && strcmp(out, "from-env\n") == 0, "exec with env", out);
	kiln_free(out);
}

static void spawn_stdin(kiln_agent *a)
{
	const char *argv[] = { "cat", NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv };
	struct kiln_proc_event ev = { .size = sizeof(ev) };
	char got[64] = "";
	kiln_proc *p = NULL;
	int r = kiln_agent_spawn(a, &o, &p), exited = 0, code = -1;

	check(r == 0 && p && kiln_proc_id(p) > 0, "spawn", kiln_agent_errmsg(a));
	if (r)
		return;
	r = kiln_proc_write_stdin(p, "ping\n", 5, KILN_AGENT_CLOSE);
	check(r == 0, "proc stdin", kiln_proc_errmsg(p));
	while (!exited && kiln_proc_next(p, 120000, &ev) == 0) {
		if (ev.exited) {
			exited = 1;
			code = ev.exit.exit_code;
		} else if (ev.len < sizeof(got) - strlen(got)) {
			strncat(got, ev.data, ev.len);
		}
	}
	check(exited && code == 0 && strcmp(got, "ping\n") == 0,
	      "spawned cat echoes its stdin and exits 0", got);
	kiln_proc_close(p);
}

static void spawn_signal(kiln_agent *a)
{
	const char *argv[] = { "sleep", "1000", NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv };
	struct kiln_exit_status st = { .size = sizeof(st) };
	kiln_proc *p = NULL, *again = NULL;
	uint32_t id;
	int r = kiln_agent_spawn(a, &o, &p);

	check(r == 0, "spawn sleep", kiln_agent_errmsg(a));
	if (r)
		return;
	id = kiln_proc_id(p);
	kiln_proc_close(p); /* detached: it keeps running */
	r = kiln_agent_attach(a, id, &again);
	check(r == 0 && kiln_proc_id(again) == id, "attach again", kiln_agent_errmsg(a));
	kiln_proc_close(again);
	r = kiln_agent_proc_wait(a, id, 200, &st);
	check(r == -ETIMEDOUT, "proc_wait times out while it runs", kiln_agent_errmsg(a));
	r = kiln_agent_proc_signal(a, id, SIGTERM, 0);
	check(r == 0, "proc_signal", kiln_agent_errmsg(a));
	r = kiln_agent_proc_wait(a, id, 120000, &st);
	check(r == 0 && st.signal == SIGTERM && st.exit_code == -1, "proc_wait sees SIGTERM",
	      kiln_agent_errmsg(a));
}

static void tar_round_trip(kiln_agent *a, const char *archive, const char *dir)
{
	char path[4096], *data = NULL;
	struct stat st;
	size_t len = 0;
	int fd = open(archive, O_RDONLY | O_CLOEXEC), r;

	r = kiln_agent_tar_upload(a, "/tmp/up", 0, fd);
	close(fd);
	check(r == 0, "tar_upload", kiln_agent_errmsg(a));
	r = kiln_agent_file_read(a, "/tmp/up/a.txt", 0, 4096, (void **)&data, &len);
	check(r == 0 && strcmp(data, "from the host\n") == 0, "uploaded file is there",
	      kiln_agent_errmsg(a));
	kiln_free(data);
	r = kiln_agent_file_read(a, "/tmp/up/a.txt", 0, 4, (void **)&data, &len);
	check(r == -EFBIG, "file_read beyond max is -EFBIG", kiln_agent_errmsg(a));
	snprintf(path, sizeof(path), "%s/down.tar", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	r = kiln_agent_tar_download(a, "/tmp/up", 0, fd);
	close(fd);
	check(r == 0 && stat(path, &st) == 0 && st.st_size >= 1024, "tar_download",
	      kiln_agent_errmsg(a));
	r = kiln_agent_file_read(a, "/no/such/file", 0, 4096, (void **)&data, &len);
	check(r == -ENOENT, "file_read of a missing file is -ENOENT", kiln_agent_errmsg(a));
}

int main(int argc, char **argv)
{
	const char *kernel = NULL, *initrd = NULL, *dir = NULL, *archive = NULL;
	char vs[4096];
	kiln_vm_config *c;
	kiln_agent *a = NULL;
	kiln_vm *vm = NULL;
	int r;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--kernel"))
			kernel = argv[i + 1];
		else if (!strcmp(argv[i], "--initrd"))
			initrd = argv[i + 1];
		else if (!strcmp(argv[i], "--workdir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--tar"))
			archive = argv[i + 1];
	}
	if (!kernel || !initrd || !dir || !archive) {
		fprintf(stderr,
			"usage: libkiln_agent --kernel K --initrd CPIO --workdir DIR --tar ARCHIVE\n");
		return 2;
	}
	c = kiln_vm_config_new();
	snprintf(vs, sizeof(vs), "%s/vsock", dir);
	kiln_vm_config_set_kernel(c, kernel);
	kiln_vm_config_set_initrd(c, initrd);
	kiln_vm_config_set_memory(c, 256);
	kiln_vm_config_set_cpus(c, 2);
	kiln_vm_config_set_vsock(c, vs, 0);
	/* A program that reserves its own kick signal installs its own handler. */
	kiln_vm_config_set_kick_signal(c, SIGRTMIN + 3);
	check(kiln_vm_create(c, &vm) == -EINVAL, "create refuses a kick signal without handler",
	      kiln_vm_config_errmsg(c));
	kiln_kick_signal_install(SIGRTMIN + 3);
	r = kiln_vm_create(c, &vm);
	check(r == 0, "create", kiln_vm_config_errmsg(c));
	kiln_vm_config_free(c);
	if (r)
		return 1;
	check(kiln_vm_wait(vm, 0) == -EINVAL, "wait before start is -EINVAL", NULL);
	check(kiln_vm_start(vm) == 0 && kiln_vm_start(vm) == -EALREADY, "start once",
	      kiln_vm_errmsg(vm));
	check(kiln_vm_wait(vm, 10) == -ETIMEDOUT, "wait times out while it runs", NULL);
	kiln_agent_new(kiln_vm_vsock_path(vm), &a);
	kiln_agent_set_timeout(a, 240000);
	check(kiln_agent_wait_ready(a, 240000) == 0, "agent ready", kiln_agent_errmsg(a));
	check(kiln_vm_timeline_find(vm, "agent_ready", NULL) == 0 &&
		      kiln_vm_timeline_count(vm) >= 3,
	      "timeline has agent_ready", NULL);
	exec_stream(a);
	exec_errors(a);
	spawn_stdin(a);
	spawn_signal(a);
	tar_round_trip(a, archive, dir);
	check(kiln_vm_pause(vm) == 0 && kiln_vm_is_paused(vm) == 1, "pause", kiln_vm_errmsg(vm));
	check(kiln_vm_resume(vm) == 0 && kiln_vm_is_paused(vm) == 0, "resume", kiln_vm_errmsg(vm));
	check(kiln_vm_resume(vm) == -EINVAL && strstr(kiln_vm_errmsg(vm), "not paused"),
	      "resume a running VM", kiln_vm_errmsg(vm));
	check(kiln_agent_shutdown(a, 1000) == 0, "agent shutdown", kiln_agent_errmsg(a));
	check(kiln_vm_wait(vm, 240000) == 0, "the VM ends after the guest's shutdown", NULL);
	check(kiln_vm_exit_reason(vm) == KILN_VM_EXIT_RESET, "exit reason reset",
	      kiln_vm_exit_name(kiln_vm_exit_reason(vm)));
	check(kiln_vm_pause(vm) == -ESRCH, "pause after the end is -ESRCH", kiln_vm_errmsg(vm));
	kiln_agent_free(a);
	kiln_vm_destroy(vm);
	if (!failed)
		printf("all passed\n");
	return failed;
}
