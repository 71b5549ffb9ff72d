/*
 * fuzz_agent_client: the host side of the agent protocol
 * (api/agent-client/), which kilnd and kiln-agent link: a fake agent
 * behind a real Unix socket (kiln-vmm's vsock socket and its CONNECT/OK
 * handshake) answers one request with the input's bytes, and the client
 * parses them: pong, info, exec output and exit, process lists, stat,
 * list_dir streams, read with `len` payloads, exists, watch event streams.
 *
 * Input: request (1 byte), then the agent's reply stream.
 * Invariants: a call returns 0 or -errno with a failure kind, a name and
 * a message; exec output never exceeds the cap and is NUL-terminated; an
 * exit code is 0..255 or -1 with a signal; strings handed out are
 * NUL-terminated; list callbacks get non-NULL argv entries and paths; read
 * delivers exactly what its info counts.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "fuzz.h"

#define CAP 4096

static char dir[] = "/dev/shm/kiln-fuzz-agent-XXXXXX";
static char path[96];
static int lfd = -1;
static const uint8_t *reply;
static size_t reply_len;

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static void setup_once(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	if (lfd >= 0)
		return;
	FUZZ_ASSERT(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/v.sock", dir);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FUZZ_ASSERT(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    listen(lfd, 8) == 0);
	atexit(cleanup);
}

static int wait_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/* The fake kiln-vmm + agent: OK to CONNECT, then the reply, then EOF. */
static void *fake(void *arg)
{
	char b[4096];
	int fd;

	(void)arg;
	if (!wait_in(lfd, 3000) || (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return NULL;
	for (char ch = 0; ch != '\n';)
		if (!wait_in(fd, 3000) || read(fd, &ch, 1) != 1)
			goto out;
	if (write(fd, "OK 1\n", 5) != 5 ||
	    (reply_len && write(fd, reply, reply_len) != (ssize_t)reply_len))
		goto out;
	shutdown(fd, SHUT_WR);
	while (wait_in(fd, 3000) && read(fd, b, sizeof(b)) > 0) {
	}
out:
	close(fd);
	return NULL;
}

static int on_process(void *arg, const struct agent_client_process *p)
{
	(*(uint64_t *)arg)++;
	for (size_t i = 0; i < p->argc; i++)
		FUZZ_ASSERT(p->argv[i] && strlen(p->argv[i]) < (1u << 20));
	return 0;
}

static int on_entry(void *arg, const struct agent_client_stat *e)
{
	(*(uint64_t *)arg)++;
	FUZZ_ASSERT(e->path && strlen(e->path) < (1u << 20));
	FUZZ_ASSERT(!e->target || strlen(e->target) < (1u << 20));
	return 0;
}

static int on_data(void *arg, const void *data, size_t n)
{
	FUZZ_ASSERT(data && n > 0);
	*(uint64_t *)arg += n;
	return 0;
}

static int call(const struct agent_client *c, uint8_t which, struct agent_client_err *err)
{
	switch (which % 9) {
	case 0: {
		int proto = 0;

		return agent_client_ping(c, &proto, err);
	}
	case 1: {
		struct agent_client_info info;
		int r = agent_client_info(c, &info, err);

		if (r == 0)
			FUZZ_ASSERT(memchr(info.agent_version, 0, sizeof(info.agent_version)) &&
				    memchr(info.kernel, 0, sizeof(info.kernel)) &&
				    memchr(info.hostname, 0, sizeof(info.hostname)));
		return r;
	}
	case 2: {
		const char *argv[] = { "true", NULL };
		struct agent_client_proc_opts o = { .argv = argv, .output_cap = CAP };
		struct agent_client_exec_result res;
		int r;

		memset(&res, 0, sizeof(res));
		r = agent_client_exec(c, &o, &res, err);
		if (r == 0) {
			FUZZ_ASSERT(res.out_len <= CAP && res.err_len <= CAP);
			FUZZ_ASSERT(!res.out || res.out[res.out_len] == 0);
			FUZZ_ASSERT(!res.err || res.err[res.err_len] == 0);
			FUZZ_ASSERT((res.exit.exit_code >= 0 && res.exit.exit_code <= 255) ||
				    (res.exit.exit_code == -1 && res.exit.signal > 0));
		}
		agent_client_exec_result_free(&res);
		return r;
	}
	case 3: {
		uint64_t n = 0, count = 0;
		int r = agent_client_list_processes(c, on_process, &n, &count, err);

		if (r == 0)
			FUZZ_ASSERT(count == n);
		return r;
	}
	case 4: {
		struct agent_client_stat st;
		int r;

		memset(&st, 0, sizeof(st));
		r = agent_client_stat(c, "/x", true, AGENT_USER_ROOT, &st, err);
		if (r == 0)
			FUZZ_ASSERT(st.path);
		agent_client_stat_free(&st);
		return r;
	}
	case 5: {
		uint64_t n = 0;
		struct agent_client_list_end end = { 0 };
		int r = agent_client_list_dir(c, "/", NULL, on_entry, &n, &end, err);

		if (r == 0)
			FUZZ_ASSERT(end.count == n);
		return r;
	}
	case 6: {
		uint64_t n = 0;
		struct agent_client_read_info info = { 0 };
		int r = agent_client_read(c, "/x", NULL, on_data, &n, &info, err);

		if (r == 0)
			FUZZ_ASSERT(info.bytes == n);
		return r;
	}
	case 8: {
		struct agent_client_watch_opts o = { .recursive = true };
		struct agent_client_watch *w;
		struct agent_client_fs_event ev;
		const char *end = NULL;
		uint32_t watches = 0;
		uint64_t seq = 0;
		int r = agent_client_watch(c, "/w", &o, &w, &watches, err);

		if (r)
			return r;
		while ((r = agent_client_watch_next(w, 3000, &ev, &end, err)) == 0) {
			FUZZ_ASSERT(ev.seq == seq++ && agent_fs_kind_name(ev.kind));
			if (ev.kind == AGENT_FS_OVERFLOW)
				FUZZ_ASSERT(ev.reason && !ev.path);
			else
				FUZZ_ASSERT(ev.path && ev.path[0] && ev.path[0] != '/' &&
					    (ev.kind != AGENT_FS_RENAME || ev.old_path));
		}
		if (r == 1)
			FUZZ_ASSERT(end != NULL);
		agent_client_watch_close(w);
		return r == 1 ? 0 : r;
	}
	default: {
		bool exists = false;
		enum agent_client_kind kind;

		return agent_client_exists(c, "/x", false, AGENT_USER_ROOT, &exists, &kind, err);
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_client c;
	struct agent_client_err err;
	pthread_t th;
	int r;

	if (size < 1 || size > 200000)
		return 0;
	setup_once();
	reply = data + 1;
	reply_len = size - 1;
	FUZZ_ASSERT(agent_client_init(&c, path) == 0);
	c.timeout_ms = 3000;
	FUZZ_ASSERT(pthread_create(&th, NULL, fake, NULL) == 0);
	memset(&err, 0, sizeof(err));
	r = call(&c, data[0], &err);
	pthread_join(th, NULL);
	FUZZ_ASSERT(r <= 0);
	if (r < 0) {
		FUZZ_ASSERT(err.fail != AGENT_FAIL_NONE && err.errnum == -r);
		FUZZ_ASSERT(err.msg[0] && memchr(err.msg, 0, sizeof(err.msg)));
		FUZZ_ASSERT(agent_client_err_name(&err));
	}
	return 0;
}
