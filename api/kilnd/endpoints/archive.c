/*
 * GET/PUT /v1/sandboxes/{id}/archive?path= (docs/api.md): a guest
 * directory as tar.gz, both ways, streamed, never whole in memory.
 *
 * The agent speaks plain ustar only (docs/agent-protocol.md, tar_upload /
 * tar_download) and checks every member itself; kilnd only adds or removes
 * the gzip layer (gz_stream.h, zlib). It does not parse the tar: a second
 * tar parser on the host would add attack surface for a hostile archive
 * and decide nothing the agent does not already decide.
 *
 * GET: a producer thread runs tar_download, compresses it and queues the
 * gzip bytes in a byte_queue that the response drains (as GET .../files).
 * PUT: the body is decompressed as it arrives and queued for a writer
 * thread that feeds tar_upload. A body that is not valid gzip (corrupt,
 * truncated) abandons the upload before its `end`, so the agent never
 * takes a cut archive for a whole one; members already extracted stay,
 * as with the agent's own refusals.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/http/byte_queue.h"
#include "api/proto/gz_stream.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/http/stream_job.h"

#define ARCHIVE_QUEUE_BYTES (256u << 10)
/* gzip's default: what `tar czf` gives; the agent, not zlib, is the bound. */
#define ARCHIVE_GZIP_LEVEL 6

static json_t *stats_json(const char *path, const struct kiln_tar_stats *st, uint64_t gz_bytes)
{
	return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "path", path, "files",
			 (json_int_t)st->files, "dirs", (json_int_t)st->dirs, "symlinks",
			 (json_int_t)st->symlinks, "hardlinks", (json_int_t)st->hardlinks,
			 "skipped", (json_int_t)st->skipped, "tar_bytes", (json_int_t)st->bytes,
			 "gzip_bytes", (json_int_t)gz_bytes);
}

/* ---- GET ---- */

struct get_job {
	struct stream_job sj; /* first: the job is freed through it */
	struct sandbox *sb;
	kiln_agent *a; /* the job's own (sandbox_agent_new) */
	char path[AGENT_PATH_MAX + 1];
	enum agent_user user;
	struct gz_stream gz;
};

static void get_release(struct stream_job *sj)
{
	struct get_job *j = (struct get_job *)sj;

	gz_end(&j->gz);
	kiln_agent_free(j->a);
	sandbox_put(j->sb);
	free(j);
}

static int gz_to_queue(void *arg, const void *data, size_t n)
{
	struct get_job *j = arg;

	return byte_queue_push(&j->sj.q, data, n);
}

static int tar_to_gz(void *arg, const void *data, size_t n)
{
	struct get_job *j = arg;

	return gz_enc_write(&j->gz, data, n, gz_to_queue, j);
}

/* A failure after bytes went out ends the stream without its last chunk:
 * the client sees a broken transfer (and gzip a missing trailer). */
static void get_produce(struct stream_job *sj)
{
	struct get_job *j = (struct get_job *)sj;
	int r = kiln_agent_tar_download_cb(j->a, j->path, query_user_flags(j->user), tar_to_gz, j,
					   NULL);

	if (r == 0) {
		r = gz_enc_finish(&j->gz, gz_to_queue, j);
		if (r < 0 && r != -ECANCELED)
			api_err_set(&sj->err, API_E_INTERNAL, "archive '%s': gzip: %s", j->path,
				    gz_why(&j->gz));
	} else if (r != -ECANCELED) {
		char what[64 + AGENT_PATH_MAX];

		snprintf(what, sizeof(what), "archive '%s'", j->path);
		api_err_from_agent(&sj->err, j->a, what);
	}
	stream_job_close(sj, r);
}

void handle_archive_get(struct http_req *r)
{
	struct get_job *j = calloc(1, sizeof(*j));
	const char *path;
	struct api_err e;

	if (!j || stream_job_init(&j->sj, ARCHIVE_QUEUE_BYTES, get_produce, get_release)) {
		free(j);
		api_err_set(&e, API_E_INTERNAL, "archive: out of memory");
		http_error(r, &e);
		return;
	}
	if (query_archive(r->kv, r->nkv, &path, &j->user, &e) ||
	    http_guest_target(r, &j->sb, &j->a, &e))
		goto fail;
	if (gz_enc_init(&j->gz, ARCHIVE_GZIP_LEVEL)) {
		api_err_set(&e, API_E_INTERNAL, "archive: out of memory");
		goto fail;
	}
	snprintf(j->path, sizeof(j->path), "%s", path);
	stream_job_respond(r, &j->sj, "application/gzip", false, "archive");
	return;
fail:
	gz_end(&j->gz);
	byte_queue_destroy(&j->sj.q);
	kiln_agent_free(j->a);
	if (j->sb)
		sandbox_put(j->sb);
	free(j);
	http_error(r, &e);
}

/* ---- PUT ---- */

struct put_job {
	struct sandbox *sb;
	kiln_agent *a; /* the job's own: its failure is the writer's */
	char path[AGENT_PATH_MAX + 1];
	enum agent_user user;
	struct gz_stream gz;
	struct byte_queue q; /* tar bytes: HTTP thread → writer */
	pthread_t th;
	int rc;
	struct kiln_tar_stats stats;
	bool gz_failed;
	uint64_t gz_bytes;
};

/* The writer's source: tar bytes as the body brings them. */
static long tar_source(void *arg, void *buf, size_t n)
{
	struct put_job *j = arg;
	int err;
	ssize_t k = byte_queue_pop(&j->q, buf, n, -1, &err);

	if (k > 0)
		return k;
	return err; /* 0: the body ended cleanly; < 0: abandon the upload */
}

static void *writer(void *arg)
{
	struct put_job *j = arg;

	j->stats.size = sizeof(j->stats);
	j->rc = kiln_agent_tar_upload_cb(j->a, j->path, query_user_flags(j->user), tar_source, j,
					 &j->stats);
	/* Ended early (the agent refused a member): the body's next push
	 * fails, and the rest of it is read and dropped. */
	byte_queue_abort(&j->q);
	return NULL;
}

static int tar_to_queue(void *arg, const void *data, size_t n)
{
	struct put_job *j = arg;

	return byte_queue_push(&j->q, data, n);
}

static int put_data(struct http_req *r, const void *p, size_t n)
{
	struct put_job *j = r->up;
	int rc;

	j->gz_bytes += n;
	rc = gz_dec_write(&j->gz, p, n, tar_to_queue, j);
	if (rc == -EBADMSG) {
		j->gz_failed = true;
		byte_queue_close(&j->q, -EBADMSG);
	}
	return rc;
}

/* After the writer was joined. */
static void put_release(struct http_req *r, struct put_job *j)
{
	gz_end(&j->gz);
	byte_queue_destroy(&j->q);
	kiln_agent_free(j->a);
	sandbox_put(j->sb);
	free(j);
	r->up = NULL;
}

static void put_end(struct http_req *r, bool too_large)
{
	struct put_job *j = r->up;
	char what[64 + AGENT_PATH_MAX];
	struct api_err e;

	if (too_large) {
		byte_queue_close(&j->q, -EFBIG);
	} else if (!j->gz_failed && gz_dec_finish(&j->gz) < 0) {
		j->gz_failed = true;
		byte_queue_close(&j->q, -EBADMSG);
	} else if (!j->gz_failed) {
		byte_queue_close(&j->q, 0);
	}
	pthread_join(j->th, NULL);
	if (too_large) {
		api_err_set(&e, API_E_BODY_TOO_LARGE,
			    "the archive is larger than %llu bytes (--max-upload); members before the cut were extracted into '%s'",
			    (unsigned long long)r->d->cfg.max_upload, j->path);
		http_error(r, &e);
	} else if (j->gz_failed &&
		   !(j->rc < 0 && kiln_agent_errkind(j->a) == KILN_AGENT_FAIL_AGENT)) {
		api_err_set(&e, API_E_BAD_ARCHIVE,
			    "archive '%s': the body is not a valid tar.gz: %s%s", j->path,
			    gz_why(&j->gz),
			    j->rc == 0 ? "" : " (members before it were extracted)");
		http_error(r, &e);
	} else if (j->rc < 0) {
		/* The agent's refusal (unsafe_path, ...) wins: it is the first cause. */
		snprintf(what, sizeof(what), "archive '%s'", j->path);
		api_err_from_agent(&e, j->a, what);
		http_error(r, &e);
	} else {
		http_json(r, 200, stats_json(j->path, &j->stats, j->gz_bytes));
	}
	put_release(r, j);
}

static void put_abort(struct http_req *r)
{
	struct put_job *j = r->up;

	if (!j)
		return;
	/* The client went away: abandon the upload, not `end` it. */
	byte_queue_close(&j->q, -ECONNRESET);
	pthread_join(j->th, NULL);
	put_release(r, j);
}

static const struct http_upload_ops put_ops = { .data = put_data,
						.end = put_end,
						.cancel = put_abort };

void handle_archive_put_begin(struct http_req *r)
{
	struct put_job *j = calloc(1, sizeof(*j));
	const char *path;
	struct api_err e;
	int err;

	if (!j) {
		api_err_set(&e, API_E_INTERNAL, "archive upload: out of memory");
		http_error(r, &e);
		return;
	}
	if (query_archive(r->kv, r->nkv, &path, &j->user, &e) ||
	    http_guest_target(r, &j->sb, &j->a, &e))
		goto fail;
	snprintf(j->path, sizeof(j->path), "%s", path);
	if (byte_queue_init(&j->q, ARCHIVE_QUEUE_BYTES) || gz_dec_init(&j->gz)) {
		api_err_set(&e, API_E_INTERNAL, "archive upload: out of memory");
		goto fail;
	}
	err = pthread_create(&j->th, NULL, writer, j);
	if (err) {
		api_err_set(&e, API_E_INTERNAL, "archive upload: cannot start a thread: %s",
			    strerror(err));
		goto fail;
	}
	http_upload(r, &put_ops, j);
	return;
fail:
	gz_end(&j->gz);
	if (j->q.buf)
		byte_queue_destroy(&j->q);
	kiln_agent_free(j->a);
	if (j->sb)
		sandbox_put(j->sb);
	free(j);
	http_error(r, &e);
}
