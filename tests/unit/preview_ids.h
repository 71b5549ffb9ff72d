/*
 * preview_ids: the sandbox id and preview token the preview tests
 * (test_preview_route, test_preview_spec) write their URLs and hosts with.
 */
#ifndef KILN_TEST_PREVIEW_IDS_H
#define KILN_TEST_PREVIEW_IDS_H

#define ID "0123456789ab"
#define TOK "00112233445566778899aabbccddeeff0011223344556677"

#endif
