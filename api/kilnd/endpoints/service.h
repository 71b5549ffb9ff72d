/*
 * service: kilnd's API as the HTTP library serves it (http.h's struct
 * http_service): the route table (routes.c) with the body limits of
 * kilnd's options, the peers it admits (listen.h, peer_allowed), and one
 * log line (unless --quiet) and metrics count per request.
 */
#ifndef KILN_API_SERVICE_H
#define KILN_API_SERVICE_H

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/endpoints/routes.h"
#include "api/kilnd/http/http.h"

struct api_service {
	struct http_service svc;
	struct http_limit limits[LIMIT_COUNT];
};

/* Fill s for d (which must outlive it); s->svc goes to http_start. */
void api_service_init(struct api_service *s, struct kilnd *d);

#endif
