/* kilnd's networking: firewall_spec, the create body's network and
 * firewall, kiln-vmm's --net/--firewall, the control socket's firewall
 * commands (docs/api.md, "Networking and firewall"). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/core/sandbox_spec.h"
#include "api/kilnd/supervision/vmm_argv.h"
#include "api/kilnd/supervision/vmm_control.h"

static const struct sandbox_limits lim = { .max_cpus = 8,
					   .max_memory_mib = 4096,
					   .max_disk_mib = SPEC_DISK_MAX_MIB };

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	assert_non_null(j);
	return j;
}

static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(s);
	return s;
}

static void test_canon_default_dns(void **state)
{
	json_t *in, *out;
	struct api_err e;
	char *s;

	(void)state;
	/* No rule set: DNS to passt's resolver only. */
	assert_int_equal(firewall_rules_canon(NULL, &out, &e), 0);
	assert_string_equal(json_string_value(json_array_get(json_object_get(out, "dns"), 0)),
			    "10.0.2.3");
	assert_int_equal(json_array_size(json_object_get(out, "dns")), 1);
	assert_false(json_is_true(json_object_get(out, "outbound_internet")));
	json_decref(out);
	/* The shorthand: the resolver is added. */
	in = J("{\"outbound_internet\":true}");
	assert_int_equal(firewall_rules_canon(in, &out, &e), 0);
	assert_true(json_is_true(json_object_get(out, "outbound_internet")));
	assert_int_equal(json_array_size(json_object_get(out, "dns")), 1);
	json_decref(in);
	json_decref(out);
	/* "dns":[] stays shut; given resolvers stay as given. */
	in = J("{\"dns\":[]}");
	assert_int_equal(firewall_rules_canon(in, &out, &e), 0);
	assert_int_equal(json_array_size(json_object_get(out, "dns")), 0);
	json_decref(in);
	json_decref(out);
	in = J("{\"dns\":[\"192.0.2.53\"],\"allow\":[{\"cidr\":\"10.77.1.0/24\",\"proto\":\"tcp\",\"ports\":\"80-443\"}]}");
	assert_int_equal(firewall_rules_canon(in, &out, &e), 0);
	s = dump(json_object_get(out, "dns"));
	assert_string_equal(s, "[\"192.0.2.53\"]");
	free(s);
	assert_int_equal(json_array_size(json_object_get(out, "allow")), 1);
	json_decref(in);
	/* Canonical is a fixed point. */
	{
		json_t *again;
		char *a, *b;

		assert_int_equal(firewall_rules_canon(out, &again, &e), 0);
		a = dump(out);
		b = dump(again);
		assert_string_equal(a, b);
		free(a);
		free(b);
		json_decref(again);
	}
	json_decref(out);
}

static void test_canon_errors(void **state)
{
	static const struct {
		const char *in;
		enum api_code code;
		const char *msg;
	} bad[] = {
		{ "{\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-\"}]}", API_E_BAD_FIELD,
		  "firewall: allow[0].ports \"80-\": not a port or a range LO-HI of 1..65535" },
		{ "{\"allow\":[{\"cidr\":\"10.0.0.1/8\"}]}", API_E_BAD_FIELD,
		  "firewall: allow[0].cidr \"10.0.0.1/8\": host bits are set: did you mean 10.0.0.0/8?" },
		{ "{\"alow\":[]}", API_E_UNKNOWN_FIELD, NULL },
		{ "{\"allow\":[{\"proto\":\"tcp\"}]}", API_E_MISSING_FIELD, NULL },
		{ "[1]", API_E_BAD_FIELD, "firewall: the rule set must be a JSON object" },
	};
	struct api_err e;
	json_t *out;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *in = J(bad[i].in);

		e.code = API_OK;
		if (firewall_rules_canon(in, &out, &e) != -1 || e.code != bad[i].code)
			fail_msg("case %zu: code %d, message '%s'", i, (int)e.code, e.msg);
		assert_null(out);
		if (bad[i].msg)
			assert_string_equal(e.msg, bad[i].msg);
		else
			assert_true(strncmp(e.msg, "firewall: ", 10) == 0);
		json_decref(in);
	}
}

static void test_spec_network(void **state)
{
	struct sandbox_spec s;
	struct api_err e;
	json_t *b, *j;

	(void)state;
	/* The default: no network, no firewall; to_json says so. */
	b = J("{\"image\":\"minimal\"}");
	assert_int_equal(sandbox_spec_parse(b, &lim, &s, &e), 0);
	assert_int_equal(s.network, SANDBOX_NET_NONE);
	assert_null(s.firewall);
	j = sandbox_spec_to_json(&s);
	assert_string_equal(json_string_value(json_object_get(j, "network")), "none");
	assert_null(json_object_get(j, "firewall"));
	json_decref(j);
	sandbox_spec_free(&s);
	json_decref(b);

	b = J("{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":{\"allow\":[{\"host\":\"example.com\",\"ports\":443}]}}");
	assert_int_equal(sandbox_spec_parse(b, &lim, &s, &e), 0);
	assert_int_equal(s.network, SANDBOX_NET_PASST);
	assert_non_null(s.firewall);
	assert_int_equal(json_array_size(json_object_get(s.firewall, "dns")), 1);
	j = sandbox_spec_to_json(&s);
	assert_string_equal(json_string_value(json_object_get(j, "network")), "passt");
	assert_null(json_object_get(j, "firewall")); /* firewall.json holds the rules */
	sandbox_spec_free(&s);
	/* Round trip of the rest. */
	assert_int_equal(sandbox_spec_parse(j, &lim, &s, &e), 0);
	assert_int_equal(s.network, SANDBOX_NET_PASST);
	assert_null(s.firewall);
	sandbox_spec_free(&s);
	json_decref(j);
	json_decref(b);

	/* passt without rules: fine (the default rules come at the first boot). */
	b = J("{\"image\":\"minimal\",\"network\":\"passt\"}");
	assert_int_equal(sandbox_spec_parse(b, &lim, &s, &e), 0);
	assert_null(s.firewall);
	sandbox_spec_free(&s);
	json_decref(b);
}

static void test_spec_network_errors(void **state)
{
	static const struct {
		const char *in;
		enum api_code code;
		const char *msg;
	} bad[] = {
		{ "{\"image\":\"minimal\",\"network\":\"tap\"}", API_E_BAD_FIELD,
		  "sandbox create: network 'tap' is not \"none\" or \"passt\"" },
		{ "{\"image\":\"minimal\",\"network\":7}", API_E_BAD_FIELD, NULL },
		{ "{\"image\":\"minimal\",\"firewall\":{}}", API_E_BAD_FIELD,
		  "sandbox create: 'firewall' needs \"network\": \"passt\" (without a network there is nothing to filter)" },
		{ "{\"image\":\"minimal\",\"network\":\"none\",\"firewall\":{}}", API_E_BAD_FIELD,
		  NULL },
		{ "{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":{\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-\"}]}}",
		  API_E_BAD_FIELD,
		  "firewall: allow[0].ports \"80-\": not a port or a range LO-HI of 1..65535" },
		{ "{\"image\":\"minimal\",\"network\":\"passt\",\"firewall\":{\"allow\":[],\"extra\":1}}",
		  API_E_UNKNOWN_FIELD, NULL },
	};
	struct sandbox_spec s;
	struct api_err e;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *b = J(bad[i].in);

		e.code = API_OK;
		if (sandbox_spec_parse(b, &lim, &s, &e) != -1 || e.code != bad[i].code)
			fail_msg("case %zu: code %d, message '%s'", i, (int)e.code, e.msg);
		if (bad[i].msg)
			assert_string_equal(e.msg, bad[i].msg);
		assert_null(s.firewall);
		json_decref(b);
	}
}

static struct sandbox_spec passt_spec(void)
{
	struct sandbox_spec s;

	memset(&s, 0, sizeof(s));
	strcpy(s.image, "minimal");
	strcpy(s.hostname, "box1");
	s.cpus = 1;
	s.memory_mib = 128;
	s.network = SANDBOX_NET_PASST;
	return s;
}

static void test_argv_passt(void **state)
{
	struct sandbox_spec s = passt_spec();
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/m.ext4",
				.overlay = "/st/sb/a/overlay",
				.vsock = "/st/sb/a/vsock.sock",
				.control = "/st/sb/a/control.sock",
				.firewall = "/st/sb/a/firewall.json",
				.spec = &s };
	static const char *const want[] = {
		"/k/kiln-vmm",
		"--kernel",
		"/k/vmlinux",
		"--disk-image",
		"/img/m.ext4",
		"--disk-overlay",
		"/st/sb/a/overlay",
		"--vsock-path",
		"/st/sb/a/vsock.sock",
		"--control",
		"/st/sb/a/control.sock",
		"--mem",
		"128",
		"--cpus",
		"1",
		"--boot-timeline=json",
		"--net",
		"passt",
		"--firewall",
		"/st/sb/a/firewall.json",
		"--firewall-log",
		"--cmdline",
		"quiet kiln.hostname=box1 kiln.ip=10.0.2.15/24 kiln.gw=10.0.2.2 kiln.dns=10.0.2.3",
		NULL
	};
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_int_equal(a.argc, 23);
	vmm_argv_free(&a);

	/* A restore keeps the device and the rules, has no command line. */
	l.restore_dir = "/st/sb/a/hibernate";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 21);
	assert_string_equal(a.argv[16], "--net");
	assert_string_equal(a.argv[19], "/st/sb/a/firewall.json");
	assert_string_equal(a.argv[20], "--firewall-log");
	for (size_t i = 0; i < a.argc; i++)
		assert_string_not_equal(a.argv[i], "--cmdline");
	vmm_argv_free(&a);

	/* kilnd --dns-resolver: passt's upstream nameserver, at boot and restore. */
	l.resolver = "192.0.2.53";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[17], "passt,resolver=192.0.2.53");
	vmm_argv_free(&a);
	l.resolver = "";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[17], "passt");
	vmm_argv_free(&a);

	/* The rules file is required and must be a plain absolute path. */
	l.firewall = NULL;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	l.firewall = "st/sb/a/firewall.json";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	/* Without a network the file is not looked at and nothing is added. */
	s.network = SANDBOX_NET_NONE;
	l.restore_dir = NULL;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; i < a.argc; i++) {
		assert_string_not_equal(a.argv[i], "--net");
		assert_null(strstr(a.argv[i], "kiln.ip="));
	}
	vmm_argv_free(&a);
}

/* The firewall lines kilnd sends (the codec's, vmm/control/control_proto.c). */
static char *fw_line(const char *rules, int *r)
{
	struct control_cmd cmd = { .op = rules ? CTL_FIREWALL_SET : CTL_FIREWALL_GET,
				   .json = rules };
	struct err why = { { 0 } };
	char *line;
	size_t len;

	*r = control_request(&cmd, &line, &len, &why);
	if (*r == 0)
		line[len - 1] = '\0';
	return line;
}

static void test_control_firewall_line(void **state)
{
	static char big[CONTROL_RULES_MAX + 2];
	char *line;
	int r;

	(void)state;
	line = fw_line(NULL, &r);
	assert_string_equal(line, "firewall-get");
	free(line);
	line = fw_line("{\"dns\":[\"10.0.2.3\"]}", &r);
	assert_string_equal(line, "firewall-set {\"dns\":[\"10.0.2.3\"]}");
	free(line);
	/* A newline would end the command early and start another. */
	assert_null(fw_line("{}\npause", &r));
	assert_int_equal(r, -EINVAL);
	assert_null(fw_line("", &r));
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_null(fw_line(big, &r));
	big[CONTROL_RULES_MAX] = '\0';
	line = fw_line(big, &r);
	assert_non_null(line);
	free(line);
}

/* A firewall reply through the codec: 0 with *cut / *o, or -1. */
static int fw_reply(const char *line, bool set, size_t *cut, json_t **o, char *why)
{
	struct control_reply rep;
	struct err e = { { 0 } };
	int r = control_reply_parse(line, set ? CTL_FIREWALL_SET : CTL_FIREWALL_GET, &rep, &e);

	snprintf(why, 256, "%.255s", e.msg);

	if (cut)
		*cut = rep.cut;
	if (o)
		*o = rep.firewall;
	return r ? -1 : 0;
}

static void test_control_firewall_reply(void **state)
{
	char why[256];
	json_t *o;
	size_t cut;

	(void)state;
	assert_int_equal(fw_reply("{\"ok\":true,\"cut\":3}", true, &cut, NULL, why), 0);
	assert_int_equal(cut, 3);
	assert_int_equal(fw_reply("{\"ok\":true,\"cut\":-1}", true, &cut, NULL, why), -1);
	assert_int_equal(fw_reply("{\"ok\":true}", true, &cut, NULL, why), -1);
	assert_int_equal(fw_reply("{\"ok\":false,\"error\":\"firewall: allow[0]: bad\"}", true,
				  &cut, NULL, why),
			 -1);
	assert_string_equal(why, "kiln-vmm: firewall: allow[0]: bad");
	assert_int_equal(
		fw_reply("{\"ok\":true,\"rules\":{\"dns\":[]},\"counters\":{\"flows_cut\":2,\"egress\":{\"pass_new\":{\"packets\":5,\"bytes\":9},\"drop_default\":{\"packets\":4,\"bytes\":1}},\"ingress\":{\"pass_flow\":{\"packets\":6,\"bytes\":1}}}}",
			 false, NULL, &o, why),
		0);
	{
		struct fw_totals t = { 0 };
		json_t *v = firewall_view(SANDBOX_NET_PASST, NULL, o);

		firewall_totals_add(o, &t);
		assert_int_equal(t.pass_packets, 11);
		assert_int_equal(t.drop_packets, 4);
		assert_int_equal(t.flows_cut, 2);
		assert_true(json_is_true(json_object_get(v, "running")));
		assert_non_null(json_object_get(json_object_get(v, "counters"), "egress"));
		json_decref(v);
	}
	json_decref(o);
	assert_int_equal(fw_reply("{\"ok\":true,\"rules\":{}}", false, NULL, &o, why), -1);
	assert_null(o);
	assert_int_equal(fw_reply("not json", false, NULL, &o, why), -1);
	/* Not running: the stored rules, counters null. */
	{
		json_t *rules = J("{\"dns\":[\"10.0.2.3\"]}"),
		       *v = firewall_view(SANDBOX_NET_PASST, rules, NULL);

		assert_false(json_is_true(json_object_get(v, "running")));
		assert_true(json_is_null(json_object_get(v, "counters")));
		assert_ptr_equal(json_object_get(v, "rules"), rules);
		json_decref(v);
		json_decref(rules);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canon_default_dns),
		cmocka_unit_test(test_canon_errors),
		cmocka_unit_test(test_spec_network),
		cmocka_unit_test(test_spec_network_errors),
		cmocka_unit_test(test_argv_passt),
		cmocka_unit_test(test_control_firewall_line),
		cmocka_unit_test(test_control_firewall_reply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
