/*
 * ka_cmd_fs: files and directories: read, write, stat, exists, ls,
 * mkdir, rm, mv, and whole trees as tar (tar-up, tar-down).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/kiln-agent/ka_cmds.h"

/* Options shared by the file commands; parse_file fills what it sees. */
struct file_args {
	enum agent_user user;
	const char *paths[2];
	int npaths;
	struct agent_client_read_opts read;
	struct agent_client_write_opts write;
	struct agent_client_list_opts list;
	bool no_follow, parents, recursive, overwrite, has_mode;
	uint32_t mode;
};

static int parse_file(int argc, char **argv, int want_paths, struct file_args *fa)
{
	static const struct option opts[] = {
		{ "user", required_argument, 0, OPT_USER },
		{ "offset", required_argument, 0, OPT_OFFSET },
		{ "length", required_argument, 0, OPT_LENGTH },
		{ "mode", required_argument, 0, OPT_MODE },
		{ "append", no_argument, 0, OPT_APPEND },
		{ "exclusive", no_argument, 0, OPT_EXCLUSIVE },
		{ "no-create", no_argument, 0, OPT_NO_CREATE },
		{ "parents", no_argument, 0, OPT_PARENTS },
		{ "no-follow", no_argument, 0, OPT_NO_FOLLOW },
		{ "depth", required_argument, 0, OPT_DEPTH },
		{ "limit", required_argument, 0, OPT_LIMIT },
		{ "overwrite", no_argument, 0, OPT_OVERWRITE },
		{ "recursive", no_argument, 0, 'r' },
		{ 0, 0, 0, 0 },
	};
	uint64_t v;
	int c;

	memset(fa, 0, sizeof(*fa));
	opts_reset();
	while ((c = next_opt(argc, argv, "pr", opts)) != -1) {
		switch (c) {
		case OPT_USER:
			if (!parse_user(optarg, &fa->user))
				return usage_error("--user must be 'user' or 'root', not '%s'",
						   optarg);
			break;
		case OPT_OFFSET:
			if (!parse_u64(optarg, INT64_MAX, &fa->read.offset))
				return usage_error("--offset: '%s' is not a byte offset", optarg);
			break;
		case OPT_LENGTH:
			if (!parse_u64(optarg, INT64_MAX, &fa->read.length))
				return usage_error("--length: '%s' is not a byte count", optarg);
			fa->read.has_length = true;
			break;
		case OPT_MODE:
			if (!parse_mode(optarg, &fa->mode))
				return usage_error("--mode: '%s' is not an octal mode 0..7777",
						   optarg);
			fa->has_mode = true;
			break;
		case OPT_APPEND:
			fa->write.append = true;
			break;
		case OPT_EXCLUSIVE:
			fa->write.exclusive = true;
			break;
		case OPT_NO_CREATE:
			fa->write.no_create = true;
			break;
		case OPT_PARENTS:
		case 'p':
			fa->parents = true;
			break;
		case 'r':
			fa->recursive = true;
			break;
		case OPT_NO_FOLLOW:
			fa->no_follow = true;
			break;
		case OPT_DEPTH:
			if (!parse_u64(optarg, AGENT_LIST_DEPTH_MAX, &v) || v == 0)
				return usage_error("--depth: '%s' is not 1..32", optarg);
			fa->list.depth = (uint32_t)v;
			break;
		case OPT_LIMIT:
			if (!parse_u64(optarg, AGENT_LIST_LIMIT_MAX, &v) || v == 0)
				return usage_error("--limit: '%s' is not 1..1000000", optarg);
			fa->list.limit = (uint32_t)v;
			break;
		case OPT_OVERWRITE:
			fa->overwrite = true;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (argc - optind != want_paths)
		return usage_error("%s: wrong number of paths", argv[0]);
	for (int i = 0; i < want_paths; i++)
		fa->paths[i] = argv[optind + i];
	fa->npaths = want_paths;
	fa->read.user = fa->write.user = fa->list.user = fa->user;
	fa->write.parents = fa->parents;
	fa->write.has_mode = fa->has_mode;
	fa->write.mode = fa->mode;
	return 0;
}

/*
 * Every file command is a request on the paths parse_file read: run is it
 * and its output, returning the exit status, or <0 when the request failed
 * (e says why; fs_cmd prints "kiln-agent: <name> <path>: ..." for it).
 */
struct fs_cmd {
	const char *name;
	int npaths;
	int (*run)(struct cli *cli, const struct file_args *fa, struct agent_client_err *e);
};

static int fs_cmd(struct cli *cli, int argc, char **argv, const struct fs_cmd *cmd)
{
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, cmd->npaths, &fa);

	if (r)
		return r;
	r = cmd->run(cli, &fa, &e);
	if (r >= 0)
		return r;
	snprintf(what, sizeof(what), "%s %s", cmd->name, fa.paths[0]);
	return report(what, &e);
}

static int run_read(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	return agent_client_read_fd(&cli->c, fa->paths[0], &fa->read, 1, NULL, e) < 0 ? -1 : 0;
}

static int run_write(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	uint64_t bytes = 0;

	if (agent_client_write_fd(&cli->c, fa->paths[0], &fa->write, 0, &bytes, e) < 0)
		return -1;
	if (cli->json)
		print_json(stdout, json_pack("{s:I}", "bytes", (json_int_t)bytes));
	return 0;
}

static json_t *stat_json(const struct agent_client_stat *st, bool entry)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:I, s:I, s:I, s:I}", "path", st->path, "kind",
			      agent_client_kind_name(st->kind), "size", (json_int_t)st->size,
			      "mode", (int)st->mode, "uid", (json_int_t)st->uid, "gid",
			      (json_int_t)st->gid, "nlink", (json_int_t)st->nlink, "mtime_ns",
			      (json_int_t)st->mtime_ns);

	if (o && entry)
		json_object_set_new(o, "depth", json_integer(st->depth));
	if (o && st->target)
		json_object_set_new(o, "target", json_string(st->target));
	if (o && st->lossy)
		json_object_set_new(o, "lossy", json_true());
	return o;
}

static int run_stat(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	struct agent_client_stat st;

	if (agent_client_stat(&cli->c, fa->paths[0], !fa->no_follow, fa->user, &st, e) < 0)
		return -1;
	if (cli->json) {
		print_json(stdout, stat_json(&st, false));
	} else {
		printf("path ");
		print_guest_text(stdout, st.path);
		printf("\nkind %s\nsize %" PRIu64 "\nmode %04o\nuid %u\ngid %u\nnlink %" PRIu64
		       "\nmtime_ns %" PRId64 "\n",
		       agent_client_kind_name(st.kind), st.size, st.mode, st.uid, st.gid, st.nlink,
		       st.mtime_ns);
		if (st.target) {
			/* A symlink's target is any bytes the guest chose. */
			printf("target ");
			print_guest_text(stdout, st.target);
			putchar('\n');
		}
	}
	agent_client_stat_free(&st);
	return 0;
}

static int run_exists(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	enum agent_client_kind kind;
	bool ex = false;

	if (agent_client_exists(&cli->c, fa->paths[0], !fa->no_follow, fa->user, &ex, &kind, e) < 0)
		return -1;
	if (cli->json)
		print_json(stdout,
			   ex ? json_pack("{s:b, s:s}", "exists", 1, "kind",
					  agent_client_kind_name(kind))
			      : json_pack("{s:b}", "exists", 0));
	else if (ex)
		printf("true %s\n", agent_client_kind_name(kind));
	else
		printf("false\n");
	return ex ? 0 : EXIT_FALSE;
}

static int print_entry(void *arg, const struct agent_client_stat *st)
{
	const struct cli *cli = arg;

	if (cli->json) {
		print_json(stdout, stat_json(st, true));
		return 0;
	}
	/* Names in a guest directory are any bytes the guest chose. */
	printf("%-7s %04o %12" PRIu64 " ", agent_client_kind_name(st->kind), st->mode, st->size);
	print_guest_text(stdout, st->path);
	if (st->target) {
		printf(" -> ");
		print_guest_text(stdout, st->target);
	}
	putchar('\n');
	return 0;
}

static int run_ls(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	struct agent_client_list_end end;

	if (agent_client_list_dir(&cli->c, fa->paths[0], &fa->list, print_entry, cli, &end, e) < 0)
		return -1;
	if (end.truncated)
		fprintf(stderr, "kiln-agent: ls: stopped after %" PRIu64 " entries (--limit)\n",
			end.count);
	if (end.skipped)
		fprintf(stderr, "kiln-agent: ls: %" PRIu64 " unreadable entries skipped\n",
			end.skipped);
	return 0;
}

static int run_mkdir(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	return agent_client_mkdir(&cli->c, fa->paths[0], fa->parents,
				  fa->has_mode ? (int)fa->mode : -1, fa->user, e) < 0
		? -1
		: 0;
}

static int run_rm(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	return agent_client_remove(&cli->c, fa->paths[0], fa->recursive, fa->user, e) < 0 ? -1 : 0;
}

static int run_mv(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	if (agent_client_rename(&cli->c, fa->paths[0], fa->paths[1], fa->overwrite, fa->user, e) <
	    0)
		return -1;
	return 0;
}

static void print_tar(const struct cli *cli, FILE *f, const struct agent_client_tar_stats *t,
		      bool upload)
{
	if (cli->json) {
		json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "files", (json_int_t)t->files,
				      "dirs", (json_int_t)t->dirs, "symlinks",
				      (json_int_t)t->symlinks, "skipped", (json_int_t)t->skipped,
				      "bytes", (json_int_t)t->bytes);

		if (o && upload)
			json_object_set_new(o, "hardlinks", json_integer((json_int_t)t->hardlinks));
		print_json(f, o);
		return;
	}
	fprintf(f,
		"%" PRIu64 " files, %" PRIu64 " dirs, %" PRIu64 " symlinks, %" PRIu64
		" hardlinks, %" PRIu64 " skipped, %" PRIu64 " bytes\n",
		t->files, t->dirs, t->symlinks, t->hardlinks, t->skipped, t->bytes);
}

static int run_tar_up(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	struct agent_client_tar_stats t;

	if (isatty(0))
		return usage_error("tar-up: stdin is a terminal; pipe a tar archive into it");
	if (agent_client_tar_upload(&cli->c, fa->paths[0], fa->user, 0, &t, e) < 0)
		return -1;
	print_tar(cli, stdout, &t, true);
	return 0;
}

static int run_tar_down(struct cli *cli, const struct file_args *fa, struct agent_client_err *e)
{
	struct agent_client_tar_stats t;

	if (isatty(1))
		return usage_error(
			"tar-down: stdout is a terminal; redirect the archive to a file or pipe");
	if (agent_client_tar_download(&cli->c, fa->paths[0], fa->user, 1, &t, e) < 0) {
		fprintf(stderr,
			"kiln-agent: tar-down: the archive on stdout is incomplete; discard it\n");
		return -1;
	}
	/* stdout carries the archive: the summary goes to stderr. */
	print_tar(cli, stderr, &t, false);
	return 0;
}

/* The commands of ka_cmds.h (cmd_read, ...): each a name, its paths and its run. */
#define FS_CMD(fn, name, npaths, run)                                   \
	int fn(struct cli *cli, int argc, char **argv)                  \
	{                                                               \
		static const struct fs_cmd cmd = { name, npaths, run }; \
		return fs_cmd(cli, argc, argv, &cmd);                   \
	}

FS_CMD(cmd_read, "read", 1, run_read)
FS_CMD(cmd_write, "write", 1, run_write)
FS_CMD(cmd_stat, "stat", 1, run_stat)
FS_CMD(cmd_exists, "exists", 1, run_exists)
FS_CMD(cmd_ls, "ls", 1, run_ls)
FS_CMD(cmd_mkdir, "mkdir", 1, run_mkdir)
FS_CMD(cmd_rm, "rm", 1, run_rm)
FS_CMD(cmd_mv, "mv", 2, run_mv)
FS_CMD(cmd_tar_up, "tar-up", 1, run_tar_up)
FS_CMD(cmd_tar_down, "tar-down", 1, run_tar_down)
