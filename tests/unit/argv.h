/*
 * argv: ARGV("kiln", "ls", ...), a NULL-terminated argument vector
 * written in place, for the kiln CLI's tests (test_cli_body,
 * test_cli_getopt).
 */
#ifndef KILN_TEST_ARGV_H
#define KILN_TEST_ARGV_H

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

#endif
