"""Secrets (sync and asyncio) against the fake kilnd: set, list, get and
delete send what docs/api.md says (the value only in PUT's body, owner
as a query parameter only when given), answers are metadata, and each
refusal raises its class."""

from __future__ import annotations

import socket
import unittest

from kiln import errors
from fake_kilnd import Request, error_response, json_response, response
from test_sync import Base, routes
from test_async import AsyncBase

META = {"name": "github", "owner": 1000, "created": "2026-11-30T16:33:52.681Z",
        "updated": "2026-11-30T16:33:52.681Z"}


def table():
    return routes({
        ("PUT", "/v1/secrets/github"): json_response(201, META),
        ("GET", "/v1/secrets"): json_response(200, {"secrets": [META]}),
        ("GET", "/v1/secrets/github"): json_response(200, META),
        ("DELETE", "/v1/secrets/github"): response(204),
    })


class TestSecrets(Base):
    def test_set_list_get_delete(self) -> None:
        self.fake.handler = table()
        self.assertEqual(self.k.secrets.set("github", "ghp_x y"), META)
        put = self.fake.requests[-1]
        self.assertEqual(put.json(), {"value": "ghp_x y"})
        self.assertEqual(put.target, "/v1/secrets/github")  # no owner unless given
        self.assertEqual(put.headers.get("content-type"), "application/json")
        self.assertEqual(self.k.secrets.list(), [META])
        self.assertEqual(self.k.secrets.get("github"), META)
        self.assertIsNone(self.k.secrets.delete("github"))
        self.assertEqual([r.method for r in self.fake.requests], ["PUT", "GET", "GET", "DELETE"])
        for r in self.fake.requests[1:]:
            self.assertEqual(r.body, b"")  # the value goes in the PUT alone

    def test_owner_is_a_query_parameter(self) -> None:
        self.fake.handler = table()
        self.k.secrets.set("github", "v", owner=1000)
        self.assertEqual(self.fake.requests[-1].q, {"owner": "1000"})
        self.k.secrets.list(owner=0)
        self.assertEqual(self.fake.requests[-1].q, {"owner": "0"})
        self.k.secrets.delete("github", owner=1000)
        self.assertEqual(self.fake.requests[-1].q, {"owner": "1000"})

    def test_a_name_is_one_path_segment(self) -> None:
        got: list[Request] = []

        def seen(req: Request, c: socket.socket) -> bool:
            got.append(req)
            c.sendall(error_response(400, "bad_field", "secret name"))
            return True
        self.fake.handler = seen
        with self.assertRaises(errors.BadFieldError):
            self.k.secrets.get("../sandboxes")
        self.assertEqual(got[0].target, "/v1/secrets/..%2Fsandboxes")

    def test_refusals(self) -> None:
        for status, code, cls in [(400, "bad_field", errors.BadFieldError),
                                  (400, "too_large", errors.TooLargeError),
                                  (403, "forbidden", errors.ForbiddenError),
                                  (404, "not_found", errors.NotFoundError),
                                  (409, "limit_reached", errors.LimitReachedError),
                                  (507, "no_space", errors.NoSpaceError)]:
            self.fake.handler = routes({("PUT", "/v1/secrets/a"): error_response(status, code, "no"),
                                        ("DELETE", "/v1/secrets/a"): error_response(status, code, "no")})
            with self.assertRaises(cls):
                self.k.secrets.set("a", "v")
            with self.assertRaises(cls):
                self.k.secrets.delete("a")


class TestAsyncSecrets(AsyncBase):
    async def test_set_list_get_delete(self) -> None:
        self.fake.handler = table()
        self.assertEqual(await self.k.secrets.set("github", "ghp"), META)
        self.assertEqual(self.fake.requests[-1].json(), {"value": "ghp"})
        self.assertEqual(await self.k.secrets.list(), [META])
        self.assertEqual(await self.k.secrets.get("github"), META)
        self.assertIsNone(await self.k.secrets.delete("github"))
        self.fake.handler = routes({("GET", "/v1/secrets/github"): error_response(404, "not_found", "no")})
        with self.assertRaises(errors.NotFoundError):
            await self.k.secrets.get("github")


if __name__ == "__main__":
    unittest.main()
