/* kilnd's API service; see service.h. */
#include "api/kilnd/endpoints/service.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "api/kilnd/core/listen.h"
#include "lib/base/mono.h"

static bool peer_ok(const struct http_service *svc, const struct peer *p)
{
	return peer_allowed(&svc->d->cfg, p);
}

/* Connections answered without a request read: one log line a second per
 * error code at most (log_limit.h). */
#define UNREAD_LOG_MS 1000

static void request_done(const struct http_service *svc, const struct http_req *r, bool complete)
{
	struct kilnd *d = svc->d;
	bool log = !d->cfg.quiet;
	unsigned long held = 0;
	char more[80] = "";

	pthread_mutex_lock(&d->metrics_mu);
	metrics_http(&d->metrics, r->status);
	/* A flood of refused connections is a line a second per reason. */
	if (log && r->unread != API_OK && r->unread < API_CODE_COUNT)
		log = log_limit_pass(&d->unread_log[r->unread], mono_ms(), UNREAD_LOG_MS, &held);
	pthread_mutex_unlock(&d->metrics_mu);
	/* A cut stream is logged even when quiet: its client got less than
	 * the 200 promised (a chunked body without its last chunk). */
	if (r->cut) {
		kilnd_log("uid=%u %s %s %u %.1fms (cut after %" PRIu64 " bytes of the body: %s)",
			  (unsigned)r->peer.uid, r->method, r->path, r->status, mono_ms_f() - r->t0,
			  r->sent, r->cut);
		return;
	}
	if (!log)
		return;
	if (held)
		snprintf(more, sizeof(more), " (and %lu more %s not logged)", held,
			 api_code_name(r->unread));
	kilnd_log("uid=%u %s %s %u %.1fms%s%s", (unsigned)r->peer.uid, r->method, r->path,
		  r->status, mono_ms_f() - r->t0, complete ? "" : " (connection ended early)",
		  more);
}

void api_service_init(struct api_service *s, struct kilnd *d)
{
	const struct kilnd_config *c = &d->cfg;

	s->limits[LIMIT_NONE] = (struct http_limit){ 0, "body", "none" };
	s->limits[LIMIT_BODY] = (struct http_limit){ c->max_body, "body", "--max-body" };
	s->limits[LIMIT_UPLOAD] = (struct http_limit){ c->max_upload ? c->max_upload : UINT64_MAX,
						       "upload", "--max-upload" };
	/* a build context is capped like an image archive */
	s->limits[LIMIT_IMAGE] = (struct http_limit){ c->max_image, "image archive",
						      "--max-image" };
	s->limits[LIMIT_CONTEXT] = (struct http_limit){ c->max_image, "build context",
							"--max-image" };
	s->svc = (struct http_service){
		.routes = routes,
		.nroutes = routes_count,
		.limits = s->limits,
		.nlimits = LIMIT_COUNT,
		.timeout_ms = (int)c->client_timeout_s * 1000,
		.uid_max = c->uid_connections,
		.peer_allowed = peer_ok,
		.request_done = request_done,
		.closing = &d->shutting_down,
		.d = d,
	};
}
