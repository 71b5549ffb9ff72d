/*
 * kiln template build|ls|inspect|rm (docs/api.md, "Templates"): DIR
 * packed as tar.gz (cli_tar, gz_stream) into a temporary file, sent to
 * POST /v1/templates with its length, and the build's NDJSON log
 * printed as it arrives; the list, one template's record, its removal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_tar.h"
#include "api/proto/gz_stream.h"
#include "lib/base/fd_io.h"
#include "lib/base/json.h"

enum { T_NAME = CLI_OPT_LONG, T_FILE };

static const char usage[] =
	"usage: kiln template build [-f FILE] [--name NAME] DIR | ls | inspect NAME | rm NAME";

static ssize_t read_fd(void *arg, char *p, size_t n)
{
	for (;;) {
		ssize_t got = read(*(int *)arg, p, n);

		if (got >= 0 || errno != EINTR)
			return got >= 0 ? got : -errno;
	}
}

struct pack {
	int fd;
	struct gz_stream gz;
};

static int pack_write(void *arg, const void *p, size_t n)
{
	return fd_io_write_all(((struct pack *)arg)->fd, p, n);
}

static int pack_tar(void *arg, const void *p, size_t n)
{
	struct pack *k = arg;

	return gz_enc_write(&k->gz, p, n, pack_write, k);
}

static void pack_warn(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "kiln: template build: %s\n", msg);
}

/* The build log, line by line: human text, or the lines as they are with --json. */
struct log {
	bool json;
	char buf[1 << 16];
	size_t n;
	bool failed, done;
	char err[1024];
};

static void log_line(struct log *l, const char *line, size_t n)
{
	json_t *o = json_strict_loadb(line, n, NULL);
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *data = json_string_value(json_object_get(o, "data"));

	if (type && !strcmp(type, "error")) {
		json_t *e = json_object_get(o, "error");

		l->failed = true;
		snprintf(l->err, sizeof(l->err), "step %lld: %s (%s)",
			 json_integer_value(json_object_get(o, "step")),
			 json_string_value(json_object_get(e, "message")) ?: "?",
			 json_string_value(json_object_get(e, "code")) ?: "?");
	}
	if (type && !strcmp(type, "result"))
		l->done = true;
	if (l->json) {
		fwrite(line, 1, n, stdout);
		fputc('\n', stdout);
	} else if (!type) {
		/* not ours: shown as it is */
		fwrite(line, 1, n, stdout);
		fputc('\n', stdout);
	} else if (!strcmp(type, "step") || !strcmp(type, "cached")) {
		printf("%s step %lld (line %lld): %s\n",
		       !strcmp(type, "cached") ? "CACHED" : "STEP  ",
		       json_integer_value(json_object_get(o, "step")),
		       json_integer_value(json_object_get(o, "line")),
		       json_string_value(json_object_get(o, "instruction")) ?: "");
	} else if ((!strcmp(type, "stdout") || !strcmp(type, "stderr")) && data) {
		fputs(data, !strcmp(type, "stdout") ? stdout : stderr);
	} else if (!strcmp(type, "result")) {
		json_t *t = json_object_get(o, "template");

		printf("template %s: built (%lld steps, %lld cached entries)\n",
		       json_string_value(json_object_get(t, "name")) ?: "?",
		       (long long)json_array_size(json_object_get(t, "steps")),
		       json_integer_value(json_object_get(t, "cache_entries")));
	}
	fflush(stdout);
	json_decref(o);
}

static int log_sink(void *arg, const char *p, size_t n)
{
	struct log *l = arg;

	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (l->n + take > sizeof(l->buf)) {
			/* a line longer than the buffer: shown in pieces */
			log_line(l, l->buf, l->n);
			l->n = 0;
			if (take > sizeof(l->buf))
				take = sizeof(l->buf);
		}
		memcpy(l->buf + l->n, p, take);
		l->n += take;
		p += take;
		n -= take;
		if (n && *p == '\n') {
			log_line(l, l->buf, l->n);
			l->n = 0;
			p++;
			n--;
		}
	}
	return 0;
}

static int template_build(struct cli_ctx *c, int argc, char **argv)
{
	static const struct option opts[] = { { "name", required_argument, NULL, T_NAME },
					      { "file", required_argument, NULL, T_FILE },
					      CLI_GLOBAL_OPTIONS };
	struct cli_req req = {
		.method = "POST", .source = read_fd, .source_size = -1, .wait_s = CLI_WAIT_UNBOUNDED
	};
	const char *name = NULL, *file = NULL, *dir = NULL;
	char path[4300], msg[ERR_MSG_MAX], tmp[] = "/tmp/kiln-context-XXXXXX";
	struct pack k = { .fd = -1 };
	struct cli_tar_stats st = { 0 };
	struct log *l = calloc(1, sizeof(*l));
	struct cli_resp resp;
	struct cli_getopt s;
	struct err e;
	struct stat fst;
	int opt, dirfd, rc;

	if (!l)
		return cli_usage_error(c, "out of memory");
	cli_getopt_init(&s, argc, argv, opts, &c->g, &e);
	while ((opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR) {
			free(l);
			return cli_usage_error(c, e.msg);
		}
		if (opt == T_NAME)
			name = s.value;
		else if (opt == T_FILE)
			file = s.value;
		else if (opt == CLI_GETOPT_WORD && !dir)
			dir = s.value;
		else {
			snprintf(msg, sizeof(msg), "unexpected argument '%s'",
				 CLI_ECHO(s.value ? s.value : "--"));
			free(l);
			return cli_usage_error(c, msg);
		}
	}
	if (!dir) {
		free(l);
		return cli_usage_error(c, usage);
	}
	if (!name) {
		/* the directory's own name, as docker build -t would want one */
		const char *b = strrchr(dir, '/');

		name = b && b[1] ? b + 1 : dir;
	}
	if (!*name || strlen(name) > 64 ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
		    strlen(name)) {
		free(l);
		return cli_usage_error(
			c,
			"--name: 1..64 of [A-Za-z0-9._-] (the directory's name is not one: give --name)");
	}
	if (file &&
	    (file[0] == '/' || strlen(file) > 4096 ||
	     strspn(file, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/") !=
		     strlen(file))) {
		free(l);
		return cli_usage_error(
			c, "-f: the build file's path inside DIR (relative; [A-Za-z0-9._-/])");
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	k.fd = mkstemp(tmp);
	if (dirfd < 0 || k.fd < 0 || gz_enc_init(&k.gz, 6)) {
		snprintf(msg, sizeof(msg), "'%s': %s", CLI_ECHO(dirfd < 0 ? dir : tmp),
			 strerror(errno));
		if (dirfd >= 0)
			close(dirfd);
		if (k.fd >= 0) {
			close(k.fd);
			unlink(tmp);
		}
		free(l);
		return cli_usage_error(c, msg);
	}
	unlink(tmp); /* ours alone; gone when closed */
	rc = cli_tar_write_dir(dirfd, pack_tar, &k, pack_warn, NULL, &st, &e);
	if (!rc)
		rc = gz_enc_finish(&k.gz, pack_write, &k);
	gz_end(&k.gz);
	close(dirfd);
	if (rc || fstat(k.fd, &fst) < 0 || lseek(k.fd, 0, SEEK_SET) < 0) {
		struct cli_fail f;

		cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "packing %s: %s", dir,
			     rc && e.msg[0] ? e.msg : strerror(rc ? -rc : errno));
		close(k.fd);
		free(l);
		return cli_report(c, "template build", &f);
	}
	snprintf(path, sizeof(path), "/v1/templates?name=%s%s%s", name, file ? "&file=" : "",
		 file ? file : "");
	req.path = path;
	req.source_arg = &k.fd;
	req.source_size = fst.st_size;
	l->json = c->g.json;
	req.sink = log_sink;
	req.sink_arg = l;
	rc = cli_call(c, "template build", &req, &resp);
	close(k.fd);
	if (!rc) {
		if (l->n)
			log_line(l, l->buf, l->n);
		free(resp.body);
		if (l->failed || !l->done) {
			struct cli_fail f;

			cli_fail_set(&f, CLI_EXIT_API, NULL, "%s",
				     l->failed ? l->err : "the build log ended without a result");
			rc = cli_report(c, "template build", &f);
		}
	}
	free(l);
	return rc;
}

/* One template, as `kiln template ls` and inspect print it without --json. */
static int show_template(FILE *out, const json_t *t)
{
	const char *name = json_string_value(json_object_get(t, "name"));

	if (!name)
		return -1;
	fprintf(out, "%s\tFROM %s\t%lld bytes\t%lld cached\t%lld in use\t%s\n", name,
		json_string_value(json_object_get(t, "from")) ?: "-",
		json_integer_value(json_object_get(t, "size_bytes")),
		json_integer_value(json_object_get(t, "cache_entries")),
		json_integer_value(json_object_get(t, "in_use")),
		json_string_value(json_object_get(t, "created_at")) ?: "-");
	return 0;
}

static int show_templates(FILE *out, const json_t *v)
{
	json_t *t;
	size_t i;

	if (!json_is_array(json_object_get(v, "templates")))
		return -1;
	json_array_foreach(json_object_get(v, "templates"), i,
			   t) if (show_template(out, t)) return -1;
	return 0;
}

int cli_cmd_template(struct cli_ctx *c, int argc, char **argv)
{
	char path[128];
	const char *name;

	int rc;

	if (argc < 2)
		return cli_usage_error(c, usage);
	/* The subcommand's words: argv[0] is its name, as getopt wants. */
	argc--;
	argv++;
	if (strcmp(argv[0], "build") == 0)
		return template_build(c, argc, argv);
	if (strcmp(argv[0], "ls") == 0) {
		if ((rc = cli_no_args(c, argc, argv)))
			return rc;
		return cli_call_show(c, "template ls", "GET", "/v1/templates", NULL,
				     show_templates);
	}
	if (strcmp(argv[0], "inspect") == 0 || strcmp(argv[0], "rm") == 0) {
		bool rm = argv[0][0] == 'r';
		json_t *v = NULL;

		if ((rc = cli_one_word(c, argc, argv, "give one template name", &name)))
			return rc;
		if (!name || !*name || strchr(name, '/') || strchr(name, '?') ||
		    strchr(name, '&') || strlen(name) > 64)
			return cli_usage_error(c, "give one template name");
		snprintf(path, sizeof(path), "/v1/templates/%s", name);
		if (!rm)
			return cli_call_show(c, "template inspect", "GET", path, NULL, NULL);
		rc = cli_call_json(c, "template rm", "DELETE", path, NULL, &v);
		if (!rc && !c->g.json)
			puts(name); /* 204, no body */
		json_decref(v);
		return rc;
	}
	return cli_usage_error(c, usage);
}
