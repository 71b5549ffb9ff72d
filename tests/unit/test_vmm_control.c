/*
 * kilnd's client of kiln-vmm's control socket: command lines refuse what
 * kiln-vmm would misread, replies are accepted only in their documented
 * shape, and a call against a fake kiln-vmm (a thread on a real Unix
 * socket) gets the reply, kiln-vmm's error, or a timeout within its
 * deadline when the VMM never answers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/kilnd/vmm_control.h"

static void test_lines(void **state)
{
	char line[VMM_CONTROL_LINE_MAX];
	char *big;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_control_line(VMM_CTL_PAUSE, NULL, false, line, sizeof(line), &e), 0);
	assert_string_equal(line, "pause");
	assert_int_equal(vmm_control_line(VMM_CTL_RESUME, "/ignored", true, line, sizeof(line), &e), 0);
	assert_string_equal(line, "resume");
	assert_int_equal(vmm_control_line(VMM_CTL_STATUS, NULL, false, line, sizeof(line), &e), 0);
	assert_string_equal(line, "status");
	assert_int_equal(vmm_control_line(VMM_CTL_SNAPSHOT, "/st/sb/a b/cp", false, line, sizeof(line), &e), 0);
	assert_string_equal(line, "snapshot /st/sb/a b/cp");
	assert_int_equal(vmm_control_line(VMM_CTL_SNAPSHOT, "/st/cp", true, line, sizeof(line), &e), 0);
	assert_string_equal(line, "snapshot --compress /st/cp");

	/* A newline would end the command and start another. */
	assert_int_equal(vmm_control_line(VMM_CTL_SNAPSHOT, "/st/cp\nresume", false, line, sizeof(line), &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.message, "control character"));
	assert_int_equal(vmm_control_line(VMM_CTL_SNAPSHOT, "relative/cp", false, line, sizeof(line), &e), -1);
	assert_non_null(strstr(e.message, "absolute"));
	assert_int_equal(vmm_control_line(VMM_CTL_SNAPSHOT, NULL, false, line, sizeof(line), &e), -1);
	assert_int_equal(vmm_control_line((enum vmm_ctl_op)9, NULL, false, line, sizeof(line), &e), -1);
	assert_int_equal(e.code, API_E_INTERNAL);
	/* Longer than kiln-vmm's line. */
	big = malloc(VMM_CONTROL_LINE_MAX + 8);
	assert_non_null(big);
	memset(big, 'a', VMM_CONTROL_LINE_MAX + 7);
	big[0] = '/';
	big[VMM_CONTROL_LINE_MAX + 7] = '\0';
	assert_int_equal(vmm_control_line(VMM_CTL_SNAPSHOT, big, false, line, sizeof(line), &e), -1);
	big[VMM_CONTROL_LINE_MAX - 12] = '\0'; /* "snapshot " + this + '\n' fits */
	assert_int_equal(vmm_control_line(VMM_CTL_SNAPSHOT, big, false, line, sizeof(line), &e), 0);
	free(big);
}

static void test_replies(void **state)
{
	struct vmm_ctl_reply r;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_control_reply_parse("{\"ok\":true,\"state\":\"paused\"}", VMM_CTL_PAUSE, &r, &e), 0);
	assert_true(r.paused);
	assert_int_equal(vmm_control_reply_parse("{\"ok\":true,\"state\":\"running\"}", VMM_CTL_RESUME, &r, &e), 0);
	assert_false(r.paused);
	assert_int_equal(vmm_control_reply_parse("{\"ok\":true,\"state\":\"running\",\"dir\":\"/s/cp\","
						 "\"memory_bytes\":134217728,\"memory_stored_bytes\":9437184,"
						 "\"state_bytes\":70000,\"disk_bytes\":4096,\"ms\":41.25}",
						 VMM_CTL_SNAPSHOT, &r, &e),
			 0);
	assert_int_equal(r.memory_bytes, 134217728);
	assert_int_equal(r.memory_stored_bytes, 9437184);
	assert_int_equal(r.state_bytes, 70000);
	assert_int_equal(r.disk_bytes, 4096);
	assert_true(r.ms == 41.25);
	assert_false(r.paused);

	/* kiln-vmm's refusal carries its message. */
	assert_int_equal(vmm_control_reply_parse("{\"ok\":false,\"error\":\"snapshot: disk full\"}", VMM_CTL_SNAPSHOT,
						 &r, &e),
			 -1);
	assert_int_equal(e.code, API_E_INTERNAL);
	assert_string_equal(e.message, "kiln-vmm: snapshot: disk full");

	static const char *const bad[] = {
		"",
		"ok",
		"[true]",
		"{\"state\":\"running\"}",
		"{\"ok\":1,\"state\":\"running\"}",
		"{\"ok\":true}",
		"{\"ok\":true,\"state\":\"sleeping\"}",
		"{\"ok\":true,\"ok\":true,\"state\":\"running\"}",
		/* a snapshot reply without its sizes, or with nonsense in them */
		"{\"ok\":true,\"state\":\"running\"}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":-1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":0,\"ms\":1}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":\"0\",\"ms\":1}",
		"{\"ok\":true,\"state\":\"running\",\"memory_bytes\":1,\"memory_stored_bytes\":0,\"state_bytes\":0,"
		"\"disk_bytes\":0}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum vmm_ctl_op op = i < 8 ? VMM_CTL_STATUS : VMM_CTL_SNAPSHOT;

		if (vmm_control_reply_parse(bad[i], op, &r, &e) != -1 || e.code != API_E_INTERNAL)
			fail_msg("accepted '%s'", bad[i]);
	}
}

/* ---- a fake kiln-vmm ---- */

struct fake {
	char path[108];
	int lfd;
	const char *reply; /* NULL: read the command, never answer */
	char got[256];
	pthread_t th;
};

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	int fd = accept(f->lfd, NULL, NULL);
	size_t n = 0;

	if (fd < 0)
		return NULL;
	while (n < sizeof(f->got) - 1) {
		ssize_t k = read(fd, f->got + n, 1);

		if (k <= 0)
			break;
		n++;
		if (f->got[n - 1] == '\n')
			break;
	}
	f->got[n] = '\0';
	if (f->reply) {
		if (write(fd, f->reply, strlen(f->reply)) < 0) {
			/* the test sees the missing reply */
		}
	} else {
		/* A hung VMM: keep the connection open, say nothing. */
		char c;

		if (read(fd, &c, 1) < 0) {
			/* the client gave up */
		}
	}
	close(fd);
	return NULL;
}

static void fake_start(struct fake *f, const char *reply)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/tmp/kiln-ctl-test.%d.sock", (int)getpid());
	unlink(f->path);
	memcpy(a.sun_path, f->path, strlen(f->path) + 1);
	f->reply = reply;
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->lfd, 1), 0);
	assert_int_equal(pthread_create(&f->th, NULL, fake_serve, f), 0);
}

static void fake_stop(struct fake *f)
{
	pthread_join(f->th, NULL);
	close(f->lfd);
	unlink(f->path);
}

static void test_call(void **state)
{
	struct vmm_ctl_reply r;
	struct api_err e;
	struct fake f;

	(void)state;
	/* The reply may come in pieces and carry more after its newline. */
	fake_start(&f, "{\"ok\":true,\"state\":\"paused\",\"dir\":\"/x\",\"memory_bytes\":1,\"memory_stored_bytes\":1,"
		       "\"state_bytes\":2,\"disk_bytes\":3,\"ms\":0.5}\ntrailing");
	assert_int_equal(vmm_control_call(f.path, VMM_CTL_SNAPSHOT, "/x", true, 5000, &r, &e), 0);
	fake_stop(&f);
	assert_string_equal(f.got, "snapshot --compress /x\n");
	assert_true(r.paused);
	assert_int_equal(r.disk_bytes, 3);

	fake_start(&f, "{\"ok\":false,\"error\":\"control: unknown command\"}\n");
	assert_int_equal(vmm_control_call(f.path, VMM_CTL_RESUME, NULL, false, 5000, &r, &e), -1);
	fake_stop(&f);
	assert_string_equal(f.got, "resume\n");
	assert_string_equal(e.message, "kiln-vmm: control: unknown command");

	/* Closed without a reply line. */
	fake_start(&f, "{\"ok\":true");
	assert_int_equal(vmm_control_call(f.path, VMM_CTL_STATUS, NULL, false, 5000, &r, &e), -1);
	fake_stop(&f);
	assert_int_equal(e.code, API_E_INTERNAL);

	/* Never answers: the deadline ends the call. */
	{
		struct timespec t0, t1;
		double ms;

		fake_start(&f, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(vmm_control_call(f.path, VMM_CTL_PAUSE, NULL, false, 300, &r, &e), -1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fake_stop(&f);
		ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		assert_int_equal(e.code, API_E_TIMEOUT);
		assert_non_null(strstr(e.message, "'pause'"));
		assert_true(ms >= 250 && ms < 5000);
	}

	/* No VMM at all. */
	assert_int_equal(vmm_control_call("/tmp/kiln-ctl-test.none.sock", VMM_CTL_PAUSE, NULL, false, 1000, &r, &e), -1);
	assert_int_equal(e.code, API_E_INTERNAL);
	assert_non_null(strstr(e.message, "control socket"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
