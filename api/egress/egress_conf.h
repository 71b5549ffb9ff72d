/*
 * egress_conf: what kiln-egress decides with, read from its files: the
 * http rules (--rules: the whole firewall rule set, whose "http" key is
 * read through net_rules, or a bare array of http rules) and the secrets
 * (--secrets: a JSON object of name to value) injected into requests.
 *
 * A loaded configuration is immutable and reference-counted: each flow
 * holds the one that was current when it began, so SIGHUP (which loads a
 * new one and swaps it in) never changes the rules under a flow that is
 * deciding, and the old one is freed by the last flow holding it.
 *
 * Secret values never appear in a message: a refusal names the secret
 * (a name kilnd chose, [a-z0-9_-]) and what is wrong with its value. A
 * value with a control character (CR, LF, NUL: a second header line, or
 * a cut one) or over EGRESS_SECRET_MAX bytes is refused at load.
 *
 * Contract: errors are -errno with one line in e; no globals.
 */
#ifndef KILN_EGRESS_CONF_H
#define KILN_EGRESS_CONF_H

#include <stdatomic.h>

#include <jansson.h>

#include "lib/base/err.h"
#include "lib/netrules/http_rules.h"

#define EGRESS_SECRET_MAX 8192
#define EGRESS_SECRETS_TEXT_MAX (1024 * 1024)

struct egress_conf {
	atomic_int refs;
	struct http_rules *rules; /* never NULL */
	struct net_rules *set;    /* the rule set rules came from, or NULL (a bare array) */
	json_t *secrets;          /* an object of strings (empty without --secrets) */
};

/* Read rules_path and secrets_path (NULL: no secrets); refs is 1. The
 * message starts with the option and the path. */
int egress_conf_load(const char *rules_path, const char *secrets_path, struct egress_conf **out,
		     struct err *e);

/* The value of secret name, or NULL when it is not set (borrowed: valid
 * while c is held). */
const char *egress_conf_secret(const struct egress_conf *c, const char *name);

/* Take and drop a reference; the last drop frees. */
struct egress_conf *egress_conf_hold(struct egress_conf *c);
void egress_conf_drop(struct egress_conf *c);

/* The secrets text alone (the unit tests' and fuzz target's way in). */
int egress_conf_parse_secrets(const char *text, size_t len, json_t **out, struct err *e);

#endif
