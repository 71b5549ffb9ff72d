/*
 * test_ca_pem: one real CA certificate (EC P-256, "kiln test egress CA",
 * made with openssl req -x509 for these tests; its key is thrown away),
 * as configure.trust_ca carries it, for the codec's, kiln-init's and the
 * clients' tests of the guest CA.
 */
#ifndef KILN_TEST_CA_PEM_H
#define KILN_TEST_CA_PEM_H

#define TEST_CA_PEM                                                          \
	"-----BEGIN CERTIFICATE-----\n"                                      \
	"MIIBkTCCATegAwIBAgIUbMvzJj/EbO58zmwtWaG5MUmPQPkwCgYIKoZIzj0EAwIw\n" \
	"HjEcMBoGA1UEAwwTa2lsbiB0ZXN0IGVncmVzcyBDQTAeFw0yNjExMzAxNjI4Mjla\n" \
	"Fw0zNjExMjcxNjI4MjlaMB4xHDAaBgNVBAMME2tpbG4gdGVzdCBlZ3Jlc3MgQ0Ew\n" \
	"WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQs/tmnbC7M+hsUF16gfROQzmkck5Oz\n" \
	"tqztI7/CCGb2AetXKkezveCIp+7ugBfTRmYuZ8FxwDWtOO2ZbQhmUwyEo1MwUTAd\n" \
	"BgNVHQ4EFgQUtN85cHOFWLgvVULIJREFCNQVquAwHwYDVR0jBBgwFoAUtN85cHOF\n" \
	"WLgvVULIJREFCNQVquAwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF\n" \
	"AiAkVW2Zup5pbwRE8j9nN93ocI3fONE8+iIwe2Pk7be/BgIhAPuWIEtXvsR0OQUg\n" \
	"WmtzQ+HE2P2TPfXMky6d/zXX5TwZ\n"                                     \
	"-----END CERTIFICATE-----\n"

/* The same as one JSON string body (newlines escaped). */
#define TEST_CA_PEM_JSON \
	"-----BEGIN CERTIFICATE-----\\nMIIBkTCCATegAwIBAgIUbMvzJj/EbO58zmwtWaG5MUmPQPkwCgYIKoZIzj0EAwIw\\nHjEcMBoGA1UEAwwTa2lsbiB0ZXN0IGVncmVzcyBDQTAeFw0yNjExMzAxNjI4Mjla\\nFw0zNjExMjcxNjI4MjlaMB4xHDAaBgNVBAMME2tpbG4gdGVzdCBlZ3Jlc3MgQ0Ew\\nWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQs/tmnbC7M+hsUF16gfROQzmkck5Oz\\ntqztI7/CCGb2AetXKkezveCIp+7ugBfTRmYuZ8FxwDWtOO2ZbQhmUwyEo1MwUTAd\\nBgNVHQ4EFgQUtN85cHOFWLgvVULIJREFCNQVquAwHwYDVR0jBBgwFoAUtN85cHOF\\nWLgvVULIJREFCNQVquAwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF\\nAiAkVW2Zup5pbwRE8j9nN93ocI3fONE8+iIwe2Pk7be/BgIhAPuWIEtXvsR0OQUg\\nWmtzQ+HE2P2TPfXMky6d/zXX5TwZ\\n-----END CERTIFICATE-----\\n"

#endif
