/*
 * kiln image import|ls|inspect|rm (docs/api.md, "Images"): an OCI or
 * docker save tarball streamed to POST /v1/images (never read whole),
 * the list, one image's record, its removal.
 */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_format.h"
#include "lib/base/json.h"

enum { O_DEVICES = CLI_OPT_LONG, O_REF, O_NAME = 'n' };

static ssize_t read_fd(void *arg, char *p, size_t n)
{
	for (;;) {
		ssize_t got = read(*(int *)arg, p, n);

		if (got >= 0 || errno != EINTR)
			return got >= 0 ? got : -errno;
	}
}

/* One image, as `kiln image inspect` and import print it without --json. */
static int show_image(FILE *out, const json_t *im)
{
	const char *name = json_string_value(json_object_get(im, "name"));

	if (!name)
		return -1;
	fprintf(out, "%s\t%s\t%s\n", name, json_string_value(json_object_get(im, "digest")) ?: "-",
		json_string_value(json_object_get(im, "source")) ?: "-");
	return 0;
}

static int image_import(struct cli_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = { { "name", required_argument, NULL, O_NAME },
					      { "devices", no_argument, NULL, O_DEVICES },
					      { "ref", required_argument, NULL, O_REF },
					      CLI_GLOBAL_OPTIONS };
	struct cli_req req = { .method = "POST",
			       .source = read_fd,
			       .source_size = -1,
			       /* kilnd builds the image before it answers: minutes for a big one */
			       .wait_s = 3600 };
	const char *name = NULL, *file = NULL, *ref = NULL;
	char path[1024], msg[ERR_MSG_MAX]; /* name, ref (each + as %2B) */
	bool devices = false;
	struct cli_resp resp;
	struct cli_getopt s;
	struct err e;
	struct stat st;
	int opt, fd, rc;
	size_t k;
	json_t *j;

	cli_getopt_init(&s, argc, argv, opts, &c->g, &e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return cli_usage_error(c, e.msg);
		if (opt == O_NAME)
			name = s.value;
		else if (opt == O_DEVICES)
			devices = true;
		else if (opt == O_REF)
			ref = s.value;
		else if (opt == CLI_GETOPT_WORD && !file)
			file = s.value;
		else {
			snprintf(msg, sizeof(msg), "unexpected argument '%s'",
				 CLI_ECHO(s.value ? s.value : "--"));
			return cli_usage_error(c, msg);
		}
	}
	if (!file || !name)
		return cli_usage_error(
			c, "usage: kiln image import FILE --name NAME [--ref TAG] [--devices]");
	if (strlen(name) > 64 ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
		    strlen(name))
		return cli_usage_error(c, "--name: 1..64 of [A-Za-z0-9._-]");
	/* the tag goes in the query as is: only characters a query keeps */
	if (ref &&
	    (!ref[0] || strlen(ref) > 255 ||
	     strspn(ref, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@/+-") !=
		     strlen(ref)))
		return cli_usage_error(c,
				       "--ref: 1..255 of [A-Za-z0-9._:@/+-] (a tag of the layout)");
	fd = strcmp(file, "-") ? open(file, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(msg, sizeof(msg), "'%s': %s", CLI_ECHO(file), strerror(errno));
		return cli_usage_error(c, msg);
	}
	/* a file's size goes in Content-Length: kilnd refuses one over --max-image at once */
	if (S_ISREG(st.st_mode))
		req.source_size = st.st_size;
	k = (size_t)snprintf(path, sizeof(path), "/v1/images?name=%s%s%s", name,
			     devices ? "&devices=1" : "", ref ? "&ref=" : "");
	/* a query's '+' is a space: the tag's own is sent as %2B */
	for (const char *p = ref ? ref : ""; *p; p++)
		k += (size_t)snprintf(path + k, sizeof(path) - k, *p == '+' ? "%%2B" : "%c", *p);
	req.path = path;
	req.source_arg = &fd;
	rc = cli_call(c, "image import", &req, &resp);
	if (fd > 0)
		close(fd);
	if (rc)
		return rc;
	j = json_strict_loadb(resp.body, resp.len, NULL);
	if (c->g.json || !j || show_image(stdout, j))
		fwrite(resp.body, 1, resp.len, stdout), fputc('\n', stdout);
	json_decref(j);
	free(resp.body);
	return 0;
}

static int one_name(struct cli_ctx *c, int argc, char **argv, const char **name)
{
	int rc = cli_one_word(c, argc, argv, "one image name only", name);

	if (rc)
		return rc;
	if (!*name || !**name || strchr(*name, '/') || strchr(*name, '?') || strlen(*name) > 64)
		return cli_usage_error(c, "give one image name");
	return 0;
}

int cli_cmd_image(struct cli_ctx *c, int argc, char **argv)
{
	char path[128];
	const char *name;
	int rc;

	if (argc < 2)
		return cli_usage_error(
			c,
			"usage: kiln image import FILE --name NAME [--ref TAG] | ls | inspect NAME | rm NAME");
	/* The subcommand's words: argv[0] is its name, as getopt wants. */
	argc--;
	argv++;
	if (strcmp(argv[0], "import") == 0)
		return image_import(c, argc, argv);
	if (strcmp(argv[0], "ls") == 0)
		return cli_cmd_images(c, argc, argv);
	if (strcmp(argv[0], "inspect") == 0 || strcmp(argv[0], "rm") == 0) {
		bool rm = argv[0][0] == 'r';

		if ((rc = one_name(c, argc, argv, &name)))
			return rc;
		json_t *v = NULL;

		snprintf(path, sizeof(path), "/v1/images/%s", name);
		rc = cli_call_json(c, rm ? "image rm" : "image inspect", rm ? "DELETE" : "GET",
				   path, NULL, &v);
		if (!rc && v)
			rc = cli_show(c, v, show_image);
		else if (!rc && !c->g.json)
			puts(name); /* DELETE: 204, no body */
		json_decref(v);
		return rc;
	}
	return cli_usage_error(
		c,
		"usage: kiln image import FILE --name NAME [--ref TAG] | ls | inspect NAME | rm NAME");
}
