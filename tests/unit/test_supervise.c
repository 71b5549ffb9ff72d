/*
 * supervise + keeper: what a spawned kiln-vmm inherits (exactly the
 * request's keep_fds), its exit status recorded in vmm.exit, its logs
 * capped by the keeper, and a VMM that outlives the "kilnd" that started
 * it (a forked child of the test standing in for kilnd, which exits):
 * reattached by pid and start time, never under a wrong identity, and
 * stopped by its keeper after the grace period or when its directory is
 * removed. /bin/sh stands in for kiln-vmm; this test binary is the keeper
 * (`--keeper`, as kilnd is).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/kilnd/keeper/keeper.h"
#include "api/kilnd/supervision/supervise.h"

struct ended {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int status, signal;
	bool known;
	char console[64];
};

static void on_exit_cb(void *arg, const struct vmm_exit_info *info)
{
	struct ended *x = arg;

	pthread_mutex_lock(&x->mu);
	x->done = true;
	x->status = info->status;
	x->signal = info->signal;
	x->known = info->known;
	snprintf(x->console, sizeof(x->console), "%.*s", (int)info->console_len,
		 (const char *)info->console);
	pthread_cond_signal(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

static void wait_ended(struct ended *x)
{
	pthread_mutex_lock(&x->mu);
	while (!x->done)
		pthread_cond_wait(&x->cv, &x->mu);
	pthread_mutex_unlock(&x->mu);
	/* The monitor thread frees its vmm_proc after on_exit; give it the moment. */
	usleep(100000);
}

#define ENDED_INIT                                                                            \
	{                                                                                     \
		PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, -2, -2, false, "" \
	}

static void rm_dir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static int spawn_sh(const char *dir, const char *script, unsigned grace, struct ended *x,
		    struct keeper_vmm_id *id)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	struct vmm_spawn_req req = { .argv = argv,
				     .keeper = "/proc/self/exe",
				     .dir = dir,
				     .grace_s = grace,
				     .on_exit = on_exit_cb,
				     .arg = x,
				     .cgroup_fd = -1 };
	struct vmm_proc *proc;
	struct api_err e;

	return vmm_spawn(&req, &proc, id, &e);
}

static void test_keep_fds_only(void **state)
{
	struct ended x = ENDED_INIT;
	char dir[] = "/tmp/kiln-sup-XXXXXX", script[256];
	int kept, shut, plain;
	struct vmm_proc *proc;
	struct keeper_vmm_id id;
	struct api_err e;

	(void)state;
	assert_non_null(mkdtemp(dir));
	kept = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	shut = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	plain = open("/", O_PATH | O_DIRECTORY); /* not close-on-exec: closed all the same */
	assert_true(kept >= 3 && shut >= 3 && plain >= 3);
	snprintf(script, sizeof(script),
		 "[ -e /proc/self/fd/%d ] && [ ! -e /proc/self/fd/%d ] && [ ! -e /proc/self/fd/%d ]",
		 kept, shut, plain);
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct vmm_spawn_req req = { .argv = argv,
				     .keeper = "/proc/self/exe",
				     .dir = dir,
				     .on_exit = on_exit_cb,
				     .arg = &x,
				     .keep_fds = &kept,
				     .nkeep = 1,
				     .cgroup_fd = -1 };

	assert_int_equal(vmm_spawn(&req, &proc, &id, &e), 0);
	wait_ended(&x);
	assert_true(x.known);
	assert_int_equal(x.status, 0);
	/* kilnd's own stay as they were. */
	assert_true(fcntl(kept, F_GETFD) & FD_CLOEXEC);
	close(kept);
	close(shut);
	close(plain);
	rm_dir(dir);
}

/* The status goes through vmm.exit; the console's tail through console.log. */
static void test_exit_status_and_console(void **state)
{
	struct ended x = ENDED_INIT;
	char dir[] = "/tmp/kiln-sup-XXXXXX", path[128], text[256];
	struct keeper_vmm_id id;
	struct vmm_exit_info info;
	struct vmm_tails *t = malloc(sizeof(*t));
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(spawn_sh(dir, "echo console-line; echo 'kiln-vmm: broke' >&2; exit 3", 0,
				  &x, &id),
			 0);
	wait_ended(&x);
	assert_true(x.known);
	assert_int_equal(x.status, 3);
	assert_int_equal(x.signal, 0);
	assert_string_equal(x.console, "console-line\n");
	snprintf(path, sizeof(path), "%s/vmm.exit", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	/* A VMM that ends before vmm_spawn asks its keeper who it is leaves
	 * the id unknown (0): vmm.exit alone names it then. */
	if (id.pid == 0) {
		unsigned long long start;

		assert_int_equal(sscanf(text, "kiln-keeper 1 exit pid=%d start=%llu", &id.pid,
					&start),
				 2);
		id.start = start;
	}
	snprintf(path, sizeof(path), "kiln-keeper 1 exit pid=%d start=%llu status=3 signal=0\n",
		 id.pid, (unsigned long long)id.start);
	assert_string_equal(text, path);
	/* Read back for another VMM: refused. */
	id.start++;
	assert_int_equal(vmm_exit_load(dir, &id, &info, t), -1);
	assert_false(info.known);
	id.start--;
	assert_int_equal(vmm_exit_load(dir, &id, &info, t), 0);
	assert_int_equal(info.status, 3);
	/* A damaged file is no status. */
	snprintf(path, sizeof(path), "%s/vmm.exit", dir);
	f = fopen(path, "w");
	fprintf(f, "kiln-keeper 1 exit pid=%d start=%llu status=3 signal=9\n", id.pid,
		(unsigned long long)id.start);
	fclose(f);
	assert_int_equal(vmm_exit_load(dir, &id, &info, t), -1);
	/* Nor is a link to one, or one longer than a line. */
	unlink(path);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	assert_int_equal(vmm_exit_load(dir, &id, &info, t), -1);
	free(t);
	rm_dir(dir);
}

/* kiln-vmm runs under kilnd's umask, not the keeper's 077 (its jail makes
 * the directories of its root with it, which its uid must traverse). */
static void test_vmm_keeps_kilnds_umask(void **state)
{
	struct ended x = ENDED_INIT;
	char dir[] = "/tmp/kiln-sup-XXXXXX";
	struct keeper_vmm_id id;
	mode_t old = umask(022);

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(spawn_sh(dir, "[ \"$(umask)\" = 0022 ]", 0, &x, &id), 0);
	wait_ended(&x);
	umask(old);
	assert_int_equal(x.status, 0);
	rm_dir(dir);
}

/* A guest printing without end while nobody reads: 1 MiB plus one ".1". */
static void test_logs_capped(void **state)
{
	struct ended x = ENDED_INIT;
	char dir[] = "/tmp/kiln-sup-XXXXXX", path[128];
	struct keeper_vmm_id id;
	struct stat a, b;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(spawn_sh(dir, "head -c 3500000 /dev/zero | tr '\\0' x; echo; echo last", 0,
				  &x, &id),
			 0);
	wait_ended(&x);
	assert_int_equal(x.status, 0);
	snprintf(path, sizeof(path), "%s/console.log", dir);
	assert_int_equal(stat(path, &a), 0);
	snprintf(path, sizeof(path), "%s/console.log.1", dir);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_size <= KEEPER_LOG_CAP && b.st_size <= KEEPER_LOG_CAP);
	assert_true(a.st_size > 0 && b.st_size > KEEPER_LOG_CAP / 2);
	rm_dir(dir);
}

/*
 * A forked child stands in for kilnd: it spawns the VMM, says its id,
 * and exits (as a kill -9'd kilnd would). The VMM must run on.
 */
static struct keeper_vmm_id spawn_orphan(const char *dir, const char *script, unsigned grace)
{
	struct keeper_vmm_id id = { 0 };
	int p[2], st;
	pid_t kid;

	assert_int_equal(pipe(p), 0);
	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		struct ended x = ENDED_INIT;

		close(p[0]);
		if (spawn_sh(dir, script, grace, &x, &id) ||
		    write(p[1], &id, sizeof(id)) != sizeof(id))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &id, sizeof(id)), sizeof(id));
	close(p[0]);
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return id;
}

/* Poll vmm.exit until it says how want ended (bounded). */
static int wait_recorded(const char *dir, const struct keeper_vmm_id *want,
			 struct vmm_exit_info *info, struct vmm_tails *t, int secs)
{
	for (int i = 0; i < secs * 10; i++) {
		if (vmm_exit_load(dir, want, info, t) == 0)
			return 0;
		usleep(100000);
	}
	return -1;
}

static void test_outlives_kilnd_and_reattaches(void **state)
{
	struct ended x = ENDED_INIT;
	char dir[] = "/tmp/kiln-sup-XXXXXX";
	struct keeper_vmm_id id, wrong;
	struct vmm_exit_info info;
	struct vmm_tails *t = malloc(sizeof(*t));
	struct vmm_proc *proc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	id = spawn_orphan(dir, "echo up; exec sleep 60", 600);
	/* "kilnd" is gone; the VMM is not. */
	assert_int_equal(kill(id.pid, 0), 0);
	/* Another start time is another process, whatever its pid. */
	wrong = id;
	wrong.start++;
	assert_int_equal(vmm_reattach(dir, &wrong, on_exit_cb, &x, &proc), -ESTALE);
	wrong = id;
	wrong.pid = id.pid == 1 ? 2 : 1;
	assert_int_equal(vmm_reattach(dir, &wrong, on_exit_cb, &x, &proc), -ESTALE);
	assert_int_equal(vmm_reattach(dir, &id, on_exit_cb, &x, &proc), 0);
	assert_int_equal(vmm_signal(proc, SIGTERM), 0);
	wait_ended(&x);
	assert_true(x.known);
	assert_int_equal(x.status, -1);
	assert_int_equal(x.signal, SIGTERM);
	/* Ended, its keeper gone: nothing to reattach, the record says how. */
	assert_int_equal(vmm_reattach(dir, &id, on_exit_cb, &x, &proc), -ESRCH);
	assert_int_equal(vmm_exit_load(dir, &id, &info, t), 0);
	assert_int_equal(info.signal, SIGTERM);
	free(t);
	rm_dir(dir);
}

/* Nobody came back within --grace: the keeper stops its VMM. */
static void test_grace_stops_an_unsupervised_vmm(void **state)
{
	char dir[] = "/tmp/kiln-sup-XXXXXX";
	struct vmm_tails *t = malloc(sizeof(*t));
	struct vmm_exit_info info;
	struct keeper_vmm_id id;

	(void)state;
	assert_non_null(mkdtemp(dir));
	id = spawn_orphan(dir, "exec sleep 60", 1);
	assert_int_equal(wait_recorded(dir, &id, &info, t, 15), 0);
	assert_int_equal(info.signal, SIGTERM);
	assert_non_null(memmem(info.err, info.err_len, "no kilnd connected", 18));
	free(t);
	rm_dir(dir);
}

/* Running (not gone, not a zombie an init has not reaped yet). */
static bool alive(int pid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* Its sandbox deleted while no kilnd ran: the VMM is stopped. */
static void test_removed_dir_stops_the_vmm(void **state)
{
	char dir[] = "/tmp/kiln-sup-XXXXXX";
	struct keeper_vmm_id id;
	int i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	id = spawn_orphan(dir, "exec sleep 60", 600);
	rm_dir(dir);
	assert_true(alive(id.pid));
	for (i = 0; i < 100 && alive(id.pid); i++)
		usleep(100000);
	assert_false(alive(id.pid));
}

/* A create cut short: the new kilnd ends the VMM and waits for its keeper
 * to finish before it removes the directory. */
static void test_keeper_end(void **state)
{
	char dir[] = "/tmp/kiln-sup-XXXXXX";
	struct vmm_tails *t = malloc(sizeof(*t));
	struct vmm_exit_info info;
	struct keeper_vmm_id id;

	(void)state;
	assert_non_null(mkdtemp(dir));
	id = spawn_orphan(dir, "exec sleep 60", 600);
	assert_true(alive(id.pid));
	assert_int_equal(vmm_keeper_end(dir), 0);
	assert_false(alive(id.pid));
	/* Its last word is on disk already, and nobody answers any more. */
	assert_int_equal(vmm_exit_load(dir, &id, &info, t), 0);
	assert_int_equal(info.signal, SIGKILL);
	assert_int_equal(vmm_keeper_end(dir), -ESRCH);
	free(t);
	rm_dir(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep_fds_only),
		cmocka_unit_test(test_exit_status_and_console),
		cmocka_unit_test(test_vmm_keeps_kilnds_umask),
		cmocka_unit_test(test_logs_capped),
		cmocka_unit_test(test_outlives_kilnd_and_reattaches),
		cmocka_unit_test(test_grace_stops_an_unsupervised_vmm),
		cmocka_unit_test(test_removed_dir_stops_the_vmm),
		cmocka_unit_test(test_keeper_end),
	};

	/* As kilnd: this binary is the keeper too. */
	if (argc > 1 && strcmp(argv[1], "--keeper") == 0)
		return keeper_main(argc - 1, argv + 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
