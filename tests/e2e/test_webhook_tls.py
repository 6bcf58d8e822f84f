#!/usr/bin/env python3
"""HTTPS to a local TLS receiver whose certificate is signed by a test CA (made with openssl at test time): trusted
with `tls.ca_file`, delivered. A receiver with a certificate from another CA is refused (verification is on by
default) and counted as tls_error; its deliveries stay in the spool. `tls.verify: false` reaches it anyway."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402


def openssl(work, *args):
    subprocess.run([tl.need_tool("openssl")] + list(args), cwd=work.path, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_certs(work):
    openssl(work, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=faultline e2e test CA")
    openssl(work, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1")
    work.file("ext.cnf", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(work, "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf")
    # Another, untrusted CA (self-signed leaf with the right name: only the trust is wrong).
    openssl(work, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "rogue.key", "-out", "rogue.crt",
            "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
    p = lambda n: os.path.join(work.path, n)
    return p("ca.crt"), (p("server.crt"), p("server.key")), (p("rogue.crt"), p("rogue.key"))


def test(work):
    ca, good_cert, rogue_cert = make_certs(work)
    good = tl.Receiver(tls=good_cert, work=work).start()
    rogue = tl.Receiver(tls=rogue_cert, work=work).start()
    insecure = tl.Receiver(tls=rogue_cert, work=work).start()
    common = {"format": "json", "timeout": "3s", "backoff_initial": "200ms", "backoff_max": "1s"}
    config = tl.sinks_yaml([
        dict(name="trusted", url=good.url(), tls={"ca_file": ca}, **common),
        dict(name="untrusted", url=rogue.url(), tls={"ca_file": ca}, **common),
        dict(name="noverify", url=insecure.url(), tls={"verify": False}, **common),
    ])
    fl = tl.boom_daemon(work, config)
    work.append("BOOM 1")
    wait_until(lambda: good.received(), 20, what="delivery over HTTPS to the trusted receiver")
    wait_until(lambda: insecure.received(), 20, what="delivery with verify: false")
    wait_until(lambda: (fl.metric("faultline_webhook_deliveries_total", sink="untrusted", result="tls_error") or 0) >= 2,
               20, what="tls_error counted for the untrusted receiver")
    check(not rogue.received(), "a request reached the receiver with the untrusted certificate")
    check(fl.metric("faultline_webhook_deliveries_total", sink="untrusted", result="success") == 0,
          "the untrusted receiver counted a success")
    check(fl.metric("faultline_spool_bytes", sink="untrusted") > 0, "the refused delivery is not kept in the spool")
    check(fl.metric("faultline_webhook_deliveries_total", sink="trusted", result="success") == 1,
          "trusted deliveries: %s" % fl.metric("faultline_webhook_deliveries_total", sink="trusted"))
    check(fl.stop() == 0, "faultline exited non-zero")


if __name__ == "__main__":
    tl.main(test)
