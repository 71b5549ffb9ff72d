/* egress_conf: see egress_conf.h. */
#include "api/egress/egress_conf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/json.h"
#include "lib/netrules/net_rules.h"

/* The file at path, at most max bytes, NUL-terminated in a malloc'd *out. */
static int read_file(const char *opt, const char *path, size_t max, char **out, size_t *len,
		     struct err *e)
{
	char *text = malloc(max + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
	ssize_t n;

	if (fd < 0 || !text) {
		rc = err_set(e, fd < 0 ? errno : ENOMEM, "%s %s: %s", opt, path,
			     strerror(fd < 0 ? errno : ENOMEM));
		goto fail;
	}
	n = fd_io_read_full(fd, text, max + 1);
	if (n < 0 || (size_t)n > max) {
		rc = err_set(e, n < 0 ? (int)-n : EFBIG, "%s %s: %s", opt, path,
			     n < 0 ? strerror((int)-n) : "larger than 1 MiB");
		goto fail;
	}
	close(fd);
	text[n] = '\0';
	*out = text;
	*len = (size_t)n;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(text);
	return rc;
}

/* A bare array is the http rules alone; anything else is read as the
 * whole rule set, whose "http" key must be there. */
static int parse_rules(const char *path, const char *text, size_t len, struct egress_conf *c,
		       struct err *e)
{
	struct net_rules_err ne;
	size_t i = 0;

	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	if (i < len && text[i] == '[') {
		if (http_rules_parse_text(text, len, &c->rules, &ne) < 0)
			return err_set(e, EINVAL, "--rules %s: %s", path, ne.msg);
		return 0;
	}
	if (net_rules_parse_text(text, len, &c->set, &ne) < 0)
		return err_set(e, EINVAL, "--rules %s: %s", path, ne.msg);
	if (!c->set->http)
		return err_set(e, EINVAL,
			       "--rules %s: the rule set has no \"http\" key: add the http rules "
			       "the proxy is to decide by",
			       path);
	c->rules = c->set->http;
	return 0;
}

static bool secret_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > HTTP_SECRET_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-'))
			return false;
	return true;
}

int egress_conf_parse_secrets(const char *text, size_t len, json_t **out, struct err *e)
{
	json_error_t je;
	json_t *j = json_strict_loadb(text, len, &je), *v;
	const char *name;
	int rc = 0;

	if (!j)
		/* Only the position: jansson's text can quote the input
		 * ("invalid token near '...'"), a secret's bytes. */
		return err_set(e, EINVAL, "not valid JSON at line %d, column %d", je.line,
			       je.column);
	if (!json_is_object(j))
		rc = err_set(e, EINVAL, "not a JSON object of secret names to values");
	json_object_foreach(j, name, v)
	{
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);

		if (rc)
			break;
		if (!secret_name_ok(name)) {
			rc = err_set(e, EINVAL,
				     "a secret's name is not 1..64 of a-z, 0-9, '_' and '-'");
		} else if (!s) {
			rc = err_set(e, EINVAL, "secret %s: its value is not a string", name);
		} else if (n > EGRESS_SECRET_MAX) {
			rc = err_set(e, EINVAL, "secret %s: its value is over %d bytes", name,
				     EGRESS_SECRET_MAX);
		} else {
			for (size_t i = 0; i < n && !rc; i++)
				if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
					/* A CR or LF would start a header line of
					 * the secret's choosing in every request. */
					rc = err_set(e, EINVAL,
						     "secret %s: its value holds a control "
						     "character (CR, LF, ...), which no header "
						     "value may",
						     name);
		}
	}
	if (rc) {
		json_decref(j);
		return rc;
	}
	*out = j;
	return 0;
}

int egress_conf_load(const char *rules_path, const char *secrets_path, struct egress_conf **out,
		     struct err *e)
{
	struct egress_conf *c = calloc(1, sizeof(*c));
	char *text = NULL;
	size_t len;
	int rc;

	if (!c)
		return err_set(e, ENOMEM, "--rules %s: out of memory", rules_path);
	atomic_init(&c->refs, 1);
	rc = read_file("--rules", rules_path, HTTP_RULES_TEXT_MAX, &text, &len, e);
	if (rc == 0)
		rc = parse_rules(rules_path, text, len, c, e);
	free(text);
	text = NULL;
	if (rc == 0 && secrets_path) {
		rc = read_file("--secrets", secrets_path, EGRESS_SECRETS_TEXT_MAX, &text, &len, e);
		if (rc == 0 && (rc = egress_conf_parse_secrets(text, len, &c->secrets, e)) < 0) {
			struct err inner = *e;

			err_set(e, -rc, "--secrets %s: %s", secrets_path, inner.msg);
		}
		/* The text held the values: wipe it before it returns to malloc. */
		if (text)
			explicit_bzero(text, len);
		free(text);
	} else if (rc == 0) {
		c->secrets = json_object();
		if (!c->secrets)
			rc = err_set(e, ENOMEM, "--rules %s: out of memory", rules_path);
	}
	if (rc < 0) {
		egress_conf_drop(c);
		return rc;
	}
	*out = c;
	return 0;
}

const char *egress_conf_secret(const struct egress_conf *c, const char *name)
{
	return json_string_value(json_object_get(c->secrets, name));
}

struct egress_conf *egress_conf_hold(struct egress_conf *c)
{
	atomic_fetch_add(&c->refs, 1);
	return c;
}

void egress_conf_drop(struct egress_conf *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	if (c->set)
		net_rules_free(c->set);
	else
		http_rules_free(c->rules);
	json_decref(c->secrets);
	free(c);
}
