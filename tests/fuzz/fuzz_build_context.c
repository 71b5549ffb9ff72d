/*
 * fuzz_build_context: a template build's context archive
 * (api/kilnd/images/build_context.c), which comes from the
 * client: the scan (build file, member digests) and a COPY's re-packing.
 *
 * Input: the tar archive (the target gzips it, as a client would send it).
 * Invariants: no crash or leak; a refusal says why; accepted members are
 * at most CONTEXT_MEMBERS_MAX, named relative without `..`; the build
 * file is at most BUILDFILE_MAX bytes; a COPY of everything either fails
 * with a reason or writes a stream the agent's reader accepts whole.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "api/kilnd/images/build_context.h"
#include "api/proto/gz_stream.h"
#include "fuzz.h"

/* the inflated-bytes cap (--max-image), small so bombs end fast */
#define CTX_MAX (8u << 20)

static int out_fd(void *arg, const void *p, size_t n)
{
	return write(*(int *)arg, p, n) == (ssize_t)n ? 0 : -5;
}

static void check_copy(int fd, const struct build_context *c)
{
	static const char file[] = "FROM m\nCOPY . /x/\n";
	struct buildfile bf;
	struct api_err e = { 0 };
	char target[256];
	int out = memfd_create("copy", 0);
	uint8_t buf[4096];
	struct tar_reader r;
	struct tar_event ev;
	bool ended = false, bad = false;
	ssize_t n;
	off_t off = 0;

	FUZZ_ASSERT(out >= 0 && buildfile_parse(file, sizeof(file) - 1, &bf, &e) == 0);
	if (build_context_copy_tar(fd, c, &bf.steps[1], out, target, sizeof(target), &e)) {
		FUZZ_ASSERT(e.msg[0]);
	} else {
		FUZZ_ASSERT(strcmp(target, "/x") == 0);
		tar_reader_init(&r, "fuzz");
		while (!ended && !bad && (n = pread(out, buf, sizeof(buf), off)) > 0) {
			size_t used = 0;

			off += n;
			for (;;) {
				used += tar_reader_feed(&r, buf + used, (size_t)n - used, &ev);
				if (ev.kind == TAR_EV_NEED_MORE)
					break;
				if (ev.kind == TAR_EV_ERROR)
					bad = true;
				if (ev.kind == TAR_EV_END || bad) {
					ended = true;
					break;
				}
			}
		}
		/* What the context's reader accepted, re-packed, the guest's reader accepts too. */
		FUZZ_ASSERT(ended && !bad);
		tar_reader_free(&r);
	}
	buildfile_free(&bf);
	close(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct build_context c;
	struct api_err e = { 0 };
	struct gz_stream g;
	int fd = memfd_create("ctx", 0);

	FUZZ_ASSERT(fd >= 0 && gz_enc_init(&g, 1) == 0);
	FUZZ_ASSERT(gz_enc_write(&g, data, size, out_fd, &fd) == 0 &&
		    gz_enc_finish(&g, out_fd, &fd) == 0);
	gz_end(&g);
	if (build_context_scan(fd, NULL, CTX_MAX, &c, &e)) {
		FUZZ_ASSERT(e.msg[0]);
	} else {
		FUZZ_ASSERT(c.n <= CONTEXT_MEMBERS_MAX && c.buildfile &&
			    c.buildfile_len <= BUILDFILE_MAX);
		for (size_t i = 0; i < c.n; i++) {
			const char *p = c.m[i].name;

			FUZZ_ASSERT(p[0] && p[0] != '/' && strcmp(p, "..") &&
				    strncmp(p, "../", 3) && !strstr(p, "/../"));
		}
		check_copy(fd, &c);
		build_context_free(&c);
	}
	close(fd);
	return 0;
}
