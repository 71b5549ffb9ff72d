/*
 * ka_cmd_guest: the agent and the guest as a whole: wait-ready, ping,
 * info, configure, sync-clock, shutdown.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/kiln-agent/ka_cmds.h"
#include "lib/base/mono.h"

int cmd_wait_ready(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;

	(void)argv;
	if (argc > 1)
		return usage_error("wait-ready: unexpected argument '%s'", argv[1]);
	if (agent_client_wait_ready(&cli->c, cli->c.timeout_ms, &e) < 0)
		return report("wait-ready", &e);
	return 0;
}

int cmd_ping(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	int64_t t0 = mono_us();
	int proto = 0;

	if (argc > 1)
		return usage_error("ping: unexpected argument '%s'", argv[1]);
	if (agent_client_ping(&cli->c, &proto, &e) < 0)
		return report("ping", &e);
	if (cli->json)
		print_json(stdout,
			   json_pack("{s:i, s:I}", "protocol", proto, "rtt_us",
				     (json_int_t)(mono_us() - t0)));
	else
		printf("pong protocol %d (%" PRId64 " us)\n", proto, mono_us() - t0);
	return 0;
}

int cmd_info(struct cli *cli, int argc, char **argv)
{
	struct agent_client_info in;
	struct agent_client_err e;

	if (argc > 1)
		return usage_error("info: unexpected argument '%s'", argv[1]);
	if (agent_client_info(&cli->c, &in, &e) < 0)
		return report("info", &e);
	if (cli->json) {
		print_json(stdout,
			   json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}",
				     "protocol", in.protocol, "agent_version", in.agent_version,
				     "kernel", in.kernel, "hostname", in.hostname, "cpus",
				     (json_int_t)in.cpus, "mem_total", (json_int_t)in.mem_total,
				     "mem_available", (json_int_t)in.mem_available, "uptime_ms",
				     (json_int_t)in.uptime_ms, "time_ns", (json_int_t)in.time_ns,
				     "processes", (json_int_t)in.processes));
		return 0;
	}
	/* The version, kernel and host names are the guest's text. */
	printf("protocol %d\nagent_version ", in.protocol);
	print_guest_text(stdout, in.agent_version);
	printf("\nkernel ");
	print_guest_text(stdout, in.kernel);
	printf("\nhostname ");
	print_guest_text(stdout, in.hostname);
	printf("\ncpus %u\nmem_total %" PRIu64 "\nmem_available %" PRIu64 "\nuptime_ms %" PRIu64
	       "\ntime_ns %" PRId64 "\nprocesses %u\n",
	       in.cpus, in.mem_total, in.mem_available, in.uptime_ms, in.time_ns, in.processes);
	return 0;
}

/* --trust-ca FILE: the PEM text (the codec checks it). 0 or an exit status. */
static int read_ca(const char *path, char **out)
{
	size_t n;
	int r = slurp(path, out, &n);

	if (r == -E2BIG || (r == 0 && n > AGENT_TRUST_CA_MAX)) {
		free(*out);
		*out = NULL;
		return usage_error(
			"configure: --trust-ca %s: too_large: one PEM certificate is at most %d bytes",
			path, AGENT_TRUST_CA_MAX);
	}
	if (r < 0) {
		char what[PATH_MAX + 32];

		snprintf(what, sizeof(what), "configure: --trust-ca %s", path);
		return local_error(what, -r);
	}
	if (strlen(*out) != n) {
		free(*out);
		*out = NULL;
		return usage_error("configure: --trust-ca %s: has a NUL byte; not a PEM certificate",
				   path);
	}
	return 0;
}

int cmd_configure(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hostname", required_argument, 0, OPT_HOSTNAME },
		{ "interface", required_argument, 0, OPT_INTERFACE },
		{ "address", required_argument, 0, OPT_ADDRESS },
		{ "gateway", required_argument, 0, OPT_GATEWAY },
		{ "dns", required_argument, 0, OPT_DNS },
		{ "no-dns", no_argument, 0, OPT_NO_DNS },
		{ "mtu", required_argument, 0, OPT_MTU },
		{ "trust-ca", required_argument, 0, OPT_TRUST_CA },
		{ "no-trust-ca", no_argument, 0, OPT_NO_TRUST_CA },
		{ 0, 0, 0, 0 },
	};
	struct agent_client_configure cfg = { 0 };
	struct agent_client_err e;
	const char *dns[AGENT_DNS_MAX], *ca_file = NULL;
	char *ca = NULL;
	int c, r;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		switch (c) {
		case OPT_HOSTNAME:
			cfg.hostname = optarg;
			break;
		case OPT_INTERFACE:
			cfg.interface = optarg;
			break;
		case OPT_ADDRESS:
			cfg.address = optarg;
			break;
		case OPT_GATEWAY:
			cfg.gateway = optarg;
			break;
		case OPT_DNS:
			if (cfg.dns_n == AGENT_DNS_MAX)
				return usage_error(
					"--dns: at most 3 servers (resolv.conf's limit)");
			dns[cfg.dns_n++] = optarg;
			cfg.set_dns = true;
			break;
		case OPT_NO_DNS:
			cfg.set_dns = true;
			break;
		case OPT_MTU:
			if (!parse_u32(optarg, 65535, &cfg.mtu))
				return usage_error("--mtu: '%s' is not 68..65535", optarg);
			break;
		case OPT_TRUST_CA:
			ca_file = optarg;
			break;
		case OPT_NO_TRUST_CA:
			cfg.trust_ca = "";
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return usage_error("configure: unexpected argument '%s'", argv[optind]);
	if (ca_file && cfg.trust_ca)
		return usage_error("configure: --trust-ca and --no-trust-ca: give one");
	if (ca_file && (r = read_ca(ca_file, &ca)))
		return r;
	cfg.dns = dns;
	cfg.trust_ca = ca ? ca : cfg.trust_ca;
	r = agent_client_configure(&cli->c, &cfg, &e) < 0 ? report("configure", &e) : 0;
	free(ca);
	return r;
}

int cmd_sync_clock(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	struct timespec ts;
	int64_t t, delta = 0;
	uint64_t v;

	if (argc > 2)
		return usage_error("sync-clock: unexpected argument '%s'", argv[2]);
	if (argc == 2) {
		if (!parse_u64(argv[1], INT64_MAX, &v))
			return usage_error("sync-clock: '%s' is not nanoseconds since the epoch",
					   argv[1]);
		t = (int64_t)v;
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	if (agent_client_sync_clock(&cli->c, t, &delta, &e) < 0)
		return report("sync-clock", &e);
	if (cli->json)
		print_json(stdout, json_pack("{s:I}", "delta_ns", (json_int_t)delta));
	else
		printf("delta_ns %" PRId64 "\n", delta);
	return 0;
}

int cmd_shutdown(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "grace-ms", required_argument, 0, OPT_GRACE },
					      { 0, 0, 0, 0 } };
	struct agent_client_err e;
	uint32_t grace;
	int g = -1, c;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		if (c != OPT_GRACE || !parse_u32(optarg, AGENT_GRACE_MAX_MS, &grace))
			return usage_error("shutdown: --grace-ms takes 0..60000");
		g = (int)grace;
	}
	if (optind != argc)
		return usage_error("shutdown: unexpected argument '%s'", argv[optind]);
	if (agent_client_shutdown(&cli->c, g, &e) < 0)
		return report("shutdown", &e);
	return 0;
}
