/*
 * kilnd's client of kiln-vmm's control socket: a call against a fake
 * kiln-vmm (a thread on a real Unix socket) gets the reply, kiln-vmm's
 * error, or a timeout within its deadline when the VMM never answers; a
 * request kiln-vmm would misread is refused before connecting, as
 * bad_field. The lines and replies themselves are the codec's
 * (vmm/control/control_proto.c), tested in test_control_proto.c.
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

#include "api/kilnd/supervision/vmm_control.h"

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
	struct control_reply r;
	struct api_err e;
	struct fake f;

	(void)state;
	/* The reply may come in pieces and carry more after its newline. */
	fake_start(&f,
		   "{\"ok\":true,\"state\":\"paused\",\"dir\":\"/x\",\"memory_bytes\":1,\"memory_stored_bytes\":1,"
		   "\"state_bytes\":2,\"disk_bytes\":3,\"ms\":0.5}\ntrailing");
	assert_int_equal(vmm_control_call(f.path, CTL_SNAPSHOT, "/x", true, 5000, &r, &e), 0);
	fake_stop(&f);
	assert_string_equal(f.got, "snapshot --compress /x\n");
	assert_true(r.paused);
	assert_int_equal(r.disk_bytes, 3);

	fake_start(&f, "{\"ok\":false,\"error\":\"control: unknown command\"}\n");
	assert_int_equal(vmm_control_call(f.path, CTL_RESUME, NULL, false, 5000, &r, &e), -1);
	fake_stop(&f);
	assert_string_equal(f.got, "resume\n");
	assert_string_equal(e.msg, "kiln-vmm: control: unknown command");

	/* Closed without a reply line. */
	fake_start(&f, "{\"ok\":true");
	assert_int_equal(vmm_control_call(f.path, CTL_STATUS, NULL, false, 5000, &r, &e), -1);
	fake_stop(&f);
	assert_int_equal(e.code, API_E_INTERNAL);

	/* Never answers: the deadline ends the call. */
	{
		struct timespec t0, t1;
		double ms;

		fake_start(&f, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(vmm_control_call(f.path, CTL_PAUSE, NULL, false, 300, &r, &e), -1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fake_stop(&f);
		ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		assert_int_equal(e.code, API_E_TIMEOUT);
		assert_non_null(strstr(e.msg, "'pause'"));
		assert_true(ms >= 250 && ms < 5000);
	}

	/* No VMM at all. */
	assert_int_equal(vmm_control_call("/tmp/kiln-ctl-test.none.sock", CTL_PAUSE, NULL, false,
					  1000, &r, &e),
			 -1);
	assert_int_equal(e.code, API_E_INTERNAL);
	assert_non_null(strstr(e.msg, "control socket"));
}

/* Refused before any connection: no socket exists at the path. */
static void test_refused_requests(void **state)
{
	const char *none = "/tmp/kiln-ctl-test.none.sock";
	struct control_cmd bad_op = { .op = (enum control_op)9 };
	struct control_reply r;
	struct api_err e;
	size_t cut;

	(void)state;
	/* A newline would end the command and start another. */
	assert_int_equal(vmm_control_call(none, CTL_SNAPSHOT, "/st/cp\nresume", false, 1000, &r,
					  &e),
			 -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "control character"));
	assert_int_equal(vmm_control_call(none, CTL_SNAPSHOT, "relative/cp", false, 1000, &r, &e),
			 -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_non_null(strstr(e.msg, "absolute"));
	assert_int_equal(vmm_control_firewall(none, "{}\npause", 1000, &cut, NULL, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(vmm_control_run(none, &bad_op, 1000, &r, &e), -1);
	assert_int_equal(e.code, API_E_INTERNAL);
	assert_non_null(strstr(e.msg, "unknown operation"));
}

/* firewall-set and firewall-get through the fake: the line sent, the reply read. */
static void test_firewall_call(void **state)
{
	struct api_err e;
	struct fake f;
	json_t *o = NULL;
	size_t cut = 0;

	(void)state;
	fake_start(&f, "{\"ok\":true,\"cut\":2}\n");
	assert_int_equal(vmm_control_firewall(f.path, "{\"dns\":[]}", 5000, &cut, NULL, &e), 0);
	fake_stop(&f);
	assert_string_equal(f.got, "firewall-set {\"dns\":[]}\n");
	assert_int_equal(cut, 2);

	fake_start(&f, "{\"ok\":true,\"rules\":{\"dns\":[]},\"counters\":{\"flows_cut\":0}}\n");
	assert_int_equal(vmm_control_firewall(f.path, NULL, 5000, NULL, &o, &e), 0);
	fake_stop(&f);
	assert_string_equal(f.got, "firewall-get\n");
	assert_non_null(json_object_get(o, "rules"));
	assert_non_null(json_object_get(o, "counters"));
	json_decref(o);

	fake_start(&f, "{\"ok\":false,\"error\":\"firewall: allow[0]: bad\"}\n");
	assert_int_equal(vmm_control_firewall(f.path, "{\"allow\":[1]}", 5000, &cut, NULL, &e), -1);
	fake_stop(&f);
	assert_int_equal(e.code, API_E_INTERNAL);
	assert_string_equal(e.msg, "kiln-vmm: firewall: allow[0]: bad");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_requests),
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_firewall_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
