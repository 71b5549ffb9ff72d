/* Running the image importer; see image_import.h. */
#include "api/kilnd/images/image_import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/kilnd/images/images.h"
#include "api/kilnd/images/import_ns.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "lib/base/json.h"
#include "lib/base/mono.h"
#include "lib/base/sig_reset.h"

/* An import that takes longer is killed (a 16 GiB image takes minutes). */
#define IMPORT_TIMEOUT_MS (60 * 60 * 1000)
#define IMPORT_STDOUT_MAX (1u << 20)
/* How long its pipes may stay open once the importer has ended. */
#define IMPORT_PIPE_GRACE_MS 2000
#define IMPORT_STDERR_MAX (16u << 10)
#define EXIT_BAD_ARCHIVE 2

/* One run of the importer: what it is given. */
struct import_run {
	const char *importer; /* resolved for this import (image_import_helper) */
	int in, init;         /* the archive, kiln-init: its stdin and fd 3; -1: none */
	const char *ref;      /* --ref TAG; NULL: none */
	bool clean_only, devices;
};

void image_import_helper(const char *given, const char *self_dir, const char *name, char *out)
{
	if (given[0]) {
		snprintf(out, PATH_MAX, "%s", given);
		return;
	}
	snprintf(out, PATH_MAX, "%s/%s", self_dir, name);
	if (access(out, R_OK) == 0)
		return;
	snprintf(out, PATH_MAX, "%s/../lib/kiln/%s", self_dir, name);
}

int image_import_begin(struct kilnd *d, char *work, int *fd, struct api_err *e)
{
	char archive[PATH_MAX + 32];

	if (snprintf(work, IMAGE_IMPORT_WORK_MAX, "%s/images/.import-XXXXXX", d->cfg.state_dir) >=
	    IMAGE_IMPORT_WORK_MAX) {
		api_err_set(e, API_E_INTERNAL,
			    "image import: the state directory's path is too long");
		return -1;
	}
	snprintf(archive, sizeof(archive), "%s/images", d->cfg.state_dir);
	if ((mkdir(archive, 0755) < 0 && errno != EEXIST) || !mkdtemp(work)) {
		api_err_set(e, API_E_IO_ERROR,
			    "image import: cannot make a work directory in %s: %s", archive,
			    strerror(errno));
		return -1;
	}
	/* the importer's own: it writes its trees and the image here */
	if (geteuid() == 0 && chown(work, d->cfg.import_id, d->cfg.import_id) < 0) {
		api_err_set(e, API_E_IO_ERROR, "image import: chown %s: %s", work, strerror(errno));
		rmdir(work);
		return -1;
	}
	snprintf(archive, sizeof(archive), "%s/archive", work);
	*fd = open(archive, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (*fd < 0) {
		api_err_set(e, API_E_IO_ERROR, "image import: create %s: %s", archive,
			    strerror(errno));
		rmdir(work);
		return -1;
	}
	return 0;
}

/* In the child: why it cannot go on, on its stderr (what kilnd reports),
 * with write() alone. Never returns. */
static void child_fail(const char *what, int errnum)
{
	const char *name = strerrorname_np(errnum);
	const char *parts[] = { "could not confine the importer: ", what, ": ",
				name ? name : "error", "\n" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (write(2, parts[i], strlen(parts[i])) < 0)
			break;
	_exit(126);
}

/* In the child: the least privilege, then the importer. Never returns. */
static void child(const struct kilnd *d, const char *work, const struct import_run *ir, int out,
		  int err)
{
	char max_bytes[32];
	char *argv[10] = { (char *)ir->importer },
	     *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
	size_t n = 1;
	uid_t id = d->cfg.import_id;
	const char *step;
	int prog, tty, r;
	const struct {
		int res;
		rlim_t v;
	} lim[] = {
		{ RLIMIT_CORE, 0 },
		{ RLIMIT_NOFILE, 256 },
		{ RLIMIT_NPROC, 64 },
		{ RLIMIT_CPU, IMPORT_TIMEOUT_MS / 1000 },
		/* the image: content plus headroom (import_ext4.h) */
		{ RLIMIT_FSIZE, (rlim_t)(d->cfg.max_image / 4 * 5 + (1ull << 30)) },
	};

	if ((ir->in >= 0 && dup2(ir->in, 0) < 0) || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    (ir->init >= 0 && dup2(ir->init, 3) < 0))
		_exit(126);
	close_range(ir->init >= 0 ? 4 : 3, ~0U, 0);
	sig_reset_all();
	/* its own process group: what it starts (mkfs.ext4, debugfs) is
	 * killed with it, by kill(-pid), also when kilnd is not root */
	if (setpgid(0, 0) < 0)
		_exit(126);
	/* no controlling terminal of kilnd's (a foreground kilnd's) to reach */
	tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty >= 0) {
		ioctl(tty, TIOCNOTTY);
		close(tty);
	}
	/* executed from this descriptor: the mounts below may hide its path */
	prog = open(ir->importer, O_PATH | O_CLOEXEC);
	if (prog < 0)
		child_fail(ir->importer, errno);
	if (chdir(work) < 0)
		child_fail(work, errno);
	/* it then works in the work directory bound into a tmpfs of its own
	 * (IMPORT_NS_WORK): its ".." is not the host's */
	if (geteuid() == 0 && (r = import_ns_enter(&step)) < 0)
		child_fail(step, -r);
	/* kilnd is root: the importer gets the import uid and nothing else */
	if (geteuid() == 0 && (r = import_ns_drop(id)) < 0)
		child_fail("dropping to the import uid", -r);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(126);
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		struct rlimit rl = { lim[i].v, lim[i].v };

		if (setrlimit(lim[i].res, &rl) < 0)
			_exit(126);
	}
	if (ir->clean_only) {
		argv[n++] = "--clean";
	} else {
		snprintf(max_bytes, sizeof(max_bytes), "%llu",
			 (unsigned long long)d->cfg.max_image);
		argv[n++] = "--max-bytes";
		argv[n++] = max_bytes;
		if (ir->devices)
			argv[n++] = "--devices";
		if (ir->ref) {
			argv[n++] = "--ref";
			argv[n++] = (char *)ir->ref;
		}
	}
	argv[n] = NULL;
	execveat(prog, "", argv, envp, AT_EMPTY_PATH);
	_exit(127);
}

/* Read what the pipe has into buf (cap bytes with the NUL); once buf is
 * full the rest is read and dropped, so the importer never blocks on a
 * full pipe (and kilnd then never waits for it forever). */
static void drain(int fd, char *buf, size_t cap, size_t *n, bool *open_)
{
	char scratch[4096];
	bool full = *n >= cap - 1;
	ssize_t k = full ? read(fd, scratch, sizeof(scratch)) : read(fd, buf + *n, cap - 1 - *n);

	if (k > 0 && !full)
		*n += (size_t)k;
	else if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
		*open_ = false;
	buf[*n] = '\0';
}

/* Whether child `pid` has ended, leaving it unreaped (its pid and group
 * id stay taken); the _wait form blocks (false with errno on failure). */
static bool leader_ended(pid_t pid)
{
	siginfo_t si = { 0 };

	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

static bool leader_ended_wait(pid_t pid)
{
	siginfo_t si = { 0 };

	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0;
}

/* Run the importer; 0 with its exit status, out and err filled. */
static int run(struct kilnd *d, const char *work, const struct import_run *ir, int *status,
	       char *out, char *err)
{
	int po[2], pe[2];
	size_t no = 0, ne = 0;
	bool oo = true, eo = true, exited = false;
	int64_t deadline = mono_ms() + IMPORT_TIMEOUT_MS, ended_ms = 0;
	pid_t pid;

	out[0] = err[0] = '\0';
	if (pipe2(po, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		close(po[0]), close(po[1]);
		return -errno;
	}
	/* A root kilnd: the importer is the first process of a PID
	 * namespace of its own, so when it ends the kernel kills all it
	 * started, even what left its process group, and it can signal no
	 * process outside (another kilnd's importer of the same uid). */
	pid = geteuid() == 0
		? (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL)
		: fork();
	if (pid == 0)
		child(d, work, ir, po[1], pe[1]);
	if (pid > 0)
		setpgid(pid, pid); /* as the child does: no window before kill(-pid) works */
	close(po[1]);
	close(pe[1]);
	while (pid > 0 && (oo || eo)) {
		struct pollfd p[2] = { { oo ? po[0] : -1, POLLIN, 0 },
				       { eo ? pe[0] : -1, POLLIN, 0 } };
		int64_t left = deadline - mono_ms();

		/* The importer has ended but something it started holds its
		 * pipes open: the group goes now, not at the deadline. Not
		 * reaped (WNOWAIT), so the group's id stays ours. What still
		 * holds the pipes after a grace is left. */
		if (!exited && leader_ended(pid)) {
			exited = true;
			ended_ms = mono_ms();
			kill(-pid, SIGKILL);
		}
		if (exited && mono_ms() - ended_ms > IMPORT_PIPE_GRACE_MS)
			break;
		if (left <= 0) {
			kill(-pid, SIGKILL);
			snprintf(err, IMPORT_STDERR_MAX, "the import took longer than %d minutes",
				 IMPORT_TIMEOUT_MS / 60000);
			break;
		}
		if (poll(p, 2, left > 1000 ? 1000 : (int)left) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			drain(po[0], out, IMPORT_STDOUT_MAX, &no, &oo);
		if (p[1].revents)
			drain(pe[0], err, IMPORT_STDERR_MAX, &ne, &eo);
	}
	close(po[0]);
	close(pe[0]);
	if (pid < 0)
		return -EAGAIN;
	/* The leader ended and is not reaped yet: its group id cannot have
	 * been reused, so kill(-pid) reaches only what it started. */
	while (!leader_ended_wait(pid))
		if (errno != EINTR) {
			kill(-pid, SIGKILL);
			return -errno;
		}
	kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* The importer's last stderr line, for the client. */
static const char *last_line(char *s)
{
	char *nl;

	while ((nl = strrchr(s, '\n')) && nl[1] == '\0')
		*nl = '\0';
	nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}

/* No importer has run in work: it holds the archive kilnd wrote, as
 * root, and nothing else. It is removed as root (never following a link);
 * no child runs and nothing is killed, so an aborted upload never touches
 * the import another client holds the lock for. */
void image_import_abort(struct kilnd *d, const char *work)
{
	(void)d;
	sandbox_remove_dir(work);
}

/* A work directory a killed kilnd left: its importer's trees removed by
 * another importer, as the import uid (kilnd never walks a tree an
 * archive made), then the rest (archive, image.ext4) as kilnd. */
static void sweep_one(struct kilnd *d, const char *work, char *sout, char *serr)
{
	char importer[PATH_MAX];
	struct stat st;
	bool trees = false;
	int status = 0, dfd = open(work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0) {
		sandbox_remove_dir(work); /* a link or a file: removed as itself */
		return;
	}
	trees = fstatat(dfd, "outer", &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		fstatat(dfd, "stage", &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(dfd);
	image_import_helper(d->cfg.importer, d->cfg.self_dir, "kiln-image-import", importer);
	if (trees &&
	    (run(d, work,
		 &(struct import_run){
			 .importer = importer, .in = -1, .init = -1, .clean_only = true },
		 &status, sout, serr) < 0 ||
	     !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		kilnd_log("image import: %s, left by an import that was cut off, stays: %s --clean failed there (%s); remove it by hand",
			  work, importer, serr[0] ? last_line(serr) : "no message");
		return;
	}
	sandbox_remove_dir(work);
	kilnd_log("image import: removed %s, left by an import that was cut off", work);
}

void image_import_sweep(struct kilnd *d)
{
	char dir[PATH_MAX + 16], work[IMAGE_IMPORT_WORK_MAX];
	char *sout = malloc(IMPORT_STDOUT_MAX), *serr = malloc(IMPORT_STDERR_MAX);
	struct dirent *de;
	DIR *dh;

	snprintf(dir, sizeof(dir), "%s/images", d->cfg.state_dir);
	dh = sout && serr ? opendir(dir) : NULL;
	while (dh && (de = readdir(dh)))
		if (strncmp(de->d_name, ".import-", 8) == 0 &&
		    snprintf(work, sizeof(work), "%s/%s", dir, de->d_name) < (int)sizeof(work))
			sweep_one(d, work, sout, serr);
	if (dh)
		closedir(dh);
	free(sout);
	free(serr);
}

int image_import_finish(struct kilnd *d, const char *work, const char *name, const char *ref,
			bool devices, json_t **out, struct api_err *e)
{
	char path[IMAGE_IMPORT_WORK_MAX + 32], lockp[PATH_MAX + 32], importer[PATH_MAX],
		kiln_init[PATH_MAX];
	char *sout = malloc(IMPORT_STDOUT_MAX), *serr = malloc(IMPORT_STDERR_MAX);
	int in = -1, init = -1, lock = -1, st = 0, r = -1;
	struct import_run ir = { .importer = importer,
				 .devices = devices,
				 .ref = ref && ref[0] ? ref : NULL };
	json_t *res = NULL, *extra = NULL;

	*out = NULL;
	/* found now, not at start: a kiln-init or importer rebuilt or
	 * installed since is the one used */
	image_import_helper(d->cfg.importer, d->cfg.self_dir, "kiln-image-import", importer);
	image_import_helper(d->cfg.kiln_init, d->cfg.self_dir, "kiln-init", kiln_init);
	snprintf(path, sizeof(path), "%s/archive", work);
	snprintf(lockp, sizeof(lockp), "%s/images/.import.lock", d->cfg.state_dir);
	if (!sout || !serr) {
		api_err_set(e, API_E_INTERNAL, "image import: out of memory");
		goto out;
	}
	init = open(kiln_init, O_RDONLY | O_CLOEXEC);
	if (init < 0) {
		api_err_set(e, API_E_INTERNAL,
			    "image import: kiln-init %s: %s (build it with make, or pass --kiln-init PATH)",
			    kiln_init, strerror(errno));
		goto out;
	}
	in = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (in < 0 || lock < 0 || flock(lock, LOCK_EX) < 0) {
		api_err_set(e, API_E_INTERNAL, "image import: open %s: %s", in < 0 ? path : lockp,
			    strerror(errno));
		goto out;
	}
	if (access(importer, X_OK) < 0) {
		api_err_set(e, API_E_INTERNAL,
			    "image import: the importer %s: %s (build it with make, or pass --importer PATH)",
			    importer, strerror(errno));
		goto out;
	}
	ir.in = in;
	ir.init = init;
	if ((r = run(d, work, &ir, &st, sout, serr)) < 0) {
		api_err_set(e, API_E_INTERNAL, "image import: running %s: %s", importer,
			    strerror(-r));
		r = -1;
		goto out;
	}
	r = -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_BAD_ARCHIVE) {
		api_err_set(e, API_E_BAD_ARCHIVE, "%s", last_line(serr));
		goto out;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		api_err_set(e, API_E_INTERNAL, "image import failed (%s %d): %s",
			    WIFEXITED(st) ? "exit" : "signal",
			    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
			    serr[0] ? last_line(serr) : "no message");
		goto out;
	}
	res = json_strict_loads(sout, NULL);
	extra = json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?}", "manifest_digest",
			  json_object_get(res, "manifest_digest"), "format",
			  json_object_get(res, "format"), "config_digest",
			  json_object_get(res, "config_digest"), "layers",
			  json_object_get(res, "layers"), "config", json_object_get(res, "config"));
	if (!json_is_object(res) || !extra) {
		api_err_set(e, API_E_INTERNAL, "image import: the importer's answer is not JSON");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/image.ext4", work);
	if (images_register(d, name, path, "oci", extra, e) == 0 &&
	    images_get(d, name, out, e) == 0)
		r = 0;
out:
	if (in >= 0)
		close(in);
	if (init >= 0)
		close(init);
	json_decref(res);
	json_decref(extra);
	/* the importer removes its trees before it ends; one that was killed
	 * has them removed by another, as its uid */
	if (r < 0 && !WIFEXITED(st) && sout && serr)
		run(d, work,
		    &(struct import_run){
			    .importer = importer, .in = -1, .init = -1, .clean_only = true },
		    &st, sout, serr);
	free(sout);
	free(serr);
	sandbox_remove_dir(work);
	if (lock >= 0)
		close(lock);
	return r;
}
