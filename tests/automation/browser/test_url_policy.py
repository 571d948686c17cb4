"""The URL policy: schemes, domain lists, private addresses, hosts read as Chromium reads them."""

from __future__ import annotations

import socket

import pytest

from automation import Budget, Tab, UrlPolicy
from automation.errors import BudgetExceeded, UrlBlocked

PRIVATE_HINT = "TABWRIGHT_BLOCK_PRIVATE_ADDRESSES=0"


def refusal(policy: UrlPolicy, url: str) -> UrlBlocked:
    with pytest.raises(UrlBlocked) as caught:
        policy.check(url)
    return caught.value


# -- private and local addresses ------------------------------------------------------

PRIVATE = [
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://127.8.9.10:8000/admin", "127.8.9.10 is a loopback address"),
    ("http://10.0.0.5/", "10.0.0.5 is a private address"),
    ("http://172.16.0.1/", "172.16.0.1 is a private address"),
    ("http://172.31.255.255/", "172.31.255.255 is a private address"),
    ("https://192.168.1.1/", "192.168.1.1 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is the cloud metadata address"),
    ("http://169.254.10.1/", "169.254.10.1 is a link-local address"),
    ("http://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT address"),
    ("http://100.127.255.254/", "100.127.255.254 is a carrier-grade NAT address"),
    ("http://0.0.0.0:8000/", "0.0.0.0 is an unspecified address"),
    ("http://224.0.0.251/", "224.0.0.251 is a multicast address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://255.255.255.255/", "255.255.255.255 is a reserved address"),
    ("http://192.0.2.7/", "192.0.2.7 is a reserved (documentation) address"),
    ("http://[::1]:8000/", "::1 is a loopback address"),
    ("http://[::]/", ":: is an unspecified address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://[fd12:3456::1]/", "fd12:3456::1 is a unique-local address"),
    ("http://[fc00::1]/", "fc00::1 is a unique-local address"),
    ("http://[ff02::1]/", "ff02::1 is a multicast address"),
    ("http://[::ffff:127.0.0.1]/", "is a loopback address (127.0.0.1)"),
    ("http://[::ffff:169.254.169.254]/", "is the cloud metadata address (169.254.169.254)"),
    ("http://[::ffff:a00:5]/", "is a private address (10.0.0.5)"),
    ("http://[64:ff9b::10.0.0.5]/", "is a private address (10.0.0.5)"),
    ("http://[2002:c0a8:101::1]/", "is a private address (192.168.1.1)"),
    ("http://localhost/", "localhost is a loopback name"),
    ("http://LocalHost:8000/", "localhost is a loopback name"),
    ("http://localhost./", "localhost is a loopback name"),
    ("http://app.localhost/", "app.localhost is a loopback name"),
]


@pytest.mark.parametrize(("url", "reason"), PRIVATE)
def test_private_and_local_addresses_are_refused(url: str, reason: str) -> None:
    exc = refusal(UrlPolicy(), url)
    assert exc.message.startswith(f"refused URL {url!r}: ")
    assert reason in exc.message
    assert PRIVATE_HINT in exc.hint and "TABWRIGHT_ALLOWED_DOMAINS" in exc.hint


@pytest.mark.parametrize(("url", "reason"), PRIVATE)
def test_block_private_false_lets_them_through(url: str, reason: str) -> None:
    assert UrlPolicy(block_private=False).check(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "http://8.8.8.8/",
        "https://example.com/path?q=1#top",
        "http://172.32.0.1/",
        "http://100.128.0.1/",
        "http://169.255.0.1/",
        "http://[2606:4700:4700::1111]/",
        "http://[::ffff:8.8.8.8]/",
        "http://localhost.example.com/",
        "http://mylocalhost/",
        "http://127.0.0.1.nip.io/",  # a name: only DNS knows where it points
    ],
)
def test_public_hosts_pass(url: str) -> None:
    assert UrlPolicy().check(url) == url


def test_the_check_returns_the_url_trimmed() -> None:
    assert UrlPolicy().check("  https://example.com/a \n") == "https://example.com/a"


def test_long_urls_are_shown_cut_to_200_characters() -> None:
    url = "http://10.0.0.5/" + "a" * 500
    exc = refusal(UrlPolicy(), url)
    assert exc.message == f"refused URL {url[:200]!r}: 10.0.0.5 is a private address"


# -- hosts in the notations Chromium accepts ------------------------------------------

LOOPBACK_IN_DISGUISE = [
    "http://2130706433/",
    "http://0x7f.1/",
    "http://0x7F000001/",
    "http://017700000001/",
    "http://0177.0.0.01/",
    "http://127.1/",
    "http://127.0.1/",
    "http://127.0.0.1./",
    "http://%31%32%37.0.0.1/",
    "http://%31%32%37%2e0.0.1/",
    "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/",  # full-width digits and dot
    "http://127\u30020\u30020\u30021/",  # ideographic full stops
    "http://user:secret@0x7f.1:8000/",
    "http://127.0.0.1\\@example.com/",  # a backslash ends the host, like a slash
    "http:127.0.0.1/",
    "http:/\\127.0.0.1/",
    "http:\\\\127.0.0.1/",
    "http://\t127.0.\n0.1/",
    " \x00http://127.0.0.1/ ",
]


@pytest.mark.parametrize("url", LOOPBACK_IN_DISGUISE)
async def test_odd_notations_are_read_as_chromium_reads_them(module_tab: Tab, url: str) -> None:
    # Chromium itself says which host the URL names; the policy must agree.
    host = await module_tab.page.evaluate("u => new URL(u).hostname", url)
    assert host == "127.0.0.1"
    assert "127.0.0.1 is a loopback address" in refusal(UrlPolicy(), url).message


@pytest.mark.parametrize(
    "url",
    ["http://example.com\\@127.0.0.1/", "http://0x8.0x8.0x8.0x8/", "http://134744072/"],
)
async def test_what_chromium_reads_as_public_passes(module_tab: Tab, url: str) -> None:
    host = await module_tab.page.evaluate("u => new URL(u).hostname", url)
    assert host in {"example.com", "8.8.8.8"}
    assert UrlPolicy().check(url) == url.strip()


@pytest.mark.parametrize(
    "url",
    [
        "http://1.2.3.4.5/",
        "http://256.1/",
        "http://4294967296/",
        "http://0x100000000/",
        "http://09/",
        "http://foo.09/",
        "http://exa%2Fmple.com/",
    ],
)
async def test_hosts_chromium_refuses_are_malformed(module_tab: Tab, url: str) -> None:
    valid = await module_tab.page.evaluate(
        "u => { try { new URL(u); return true } catch { return false } }", url
    )
    assert not valid
    assert "malformed host" in refusal(UrlPolicy(block_private=False), url).message


# -- schemes, empty and malformed -----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("file:///etc/passwd", "file:"),
        ("FILE:///etc/passwd", "file:"),
        ("javascript:alert(1)", "javascript:"),
        ("JavaScript:alert(1)", "javascript:"),
        ("data:text/html,<h1>hi</h1>", "data:"),
        ("chrome://settings", "chrome:"),
        ("about:blank", "about:"),
        ("view-source:http://example.com/", "view-source:"),
        ("blob:http://example.com/uuid", "blob:"),
        ("ftp://example.com/", "ftp:"),
        ("ws://example.com/", "ws:"),
        ("example.com/path", "no scheme"),
        ("//example.com/path", "no scheme"),
    ],
)
def test_only_http_and_https(url: str, scheme: str) -> None:
    exc = refusal(UrlPolicy(block_private=False), url)
    assert exc.message == f"refused URL {url!r}: {scheme} is not allowed"
    assert exc.hint == "only http:// and https:// URLs can be opened"
    assert exc.code == "url_blocked"


@pytest.mark.parametrize("url", ["", "   ", None, 42])
def test_empty_urls(url: object) -> None:
    exc = refusal(UrlPolicy(), url)  # type: ignore[arg-type]
    assert exc.message == "empty URL"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://", "no host"),
        ("https:///", "no host"),
        ("http://user@/", "no host"),
        ("http://[::1/", "malformed IPv6 host"),
        ("http://[not-an-address]/", "malformed IPv6 host"),
        ("http://%ff%fe/", "malformed host"),
    ],
)
def test_malformed_urls(url: str, reason: str) -> None:
    assert reason in refusal(UrlPolicy(block_private=False), url).message


# -- allowed and blocked domains ------------------------------------------------------


def test_blocked_domains_cover_subdomains_in_any_case() -> None:
    policy = UrlPolicy(blocked_domains=("Evil.COM",))
    for url in ["http://evil.com/", "https://WWW.evil.com/x", "http://a.b.evil.com./"]:
        exc = refusal(policy, url)
        assert "is on the blocked list" in exc.message
        assert exc.hint == "blocked: Evil.COM"
    for url in ["http://notevil.com/", "http://evil.com.example.org/", "http://evil.co/"]:
        assert policy.check(url) == url


def test_allowed_domains_admit_only_themselves_and_subdomains() -> None:
    policy = UrlPolicy(allowed_domains=("example.com", ".Example.ORG"))
    for url in ["https://example.com/", "https://shop.EXAMPLE.com/", "http://example.org/"]:
        assert policy.check(url) == url
    for url in ["https://badexample.com/", "https://example.com.evil.net/", "http://8.8.8.8/"]:
        exc = refusal(policy, url)
        assert "is not on the allowed list" in exc.message
        assert exc.hint == "allowed: example.com, .Example.ORG"


def test_blocked_wins_over_allowed() -> None:
    policy = UrlPolicy(allowed_domains=("example.com",), blocked_domains=("admin.example.com",))
    assert policy.check("https://www.example.com/") == "https://www.example.com/"
    assert (
        "admin.example.com is on the blocked list"
        in refusal(policy, "https://admin.example.com/").message
    )


def test_domain_lists_compare_idn_hosts_in_ascii() -> None:
    policy = UrlPolicy(blocked_domains=("bücher.example",))
    assert (
        "xn--bcher-kva.example is on the blocked list"
        in refusal(policy, "https://xn--bcher-kva.example/").message
    )
    assert "on the blocked list" in refusal(policy, "https://BÜCHER.example/").message


def test_an_allowed_host_may_be_private() -> None:
    # How an operator lets the agent into one intranet application and nowhere else.
    policy = UrlPolicy(allowed_domains=("localhost", "10.0.0.5", "::1"))
    for url in ["http://localhost:8000/", "http://10.0.0.5/", "http://0xa000005/", "http://[::1]/"]:
        assert policy.check(url) == url
    assert "10.0.0.6 is not on the allowed list" in refusal(policy, "http://10.0.0.6/").message


def test_a_domain_entry_never_matches_an_address_by_suffix() -> None:
    policy = UrlPolicy(allowed_domains=("0.0.5",), block_private=False)
    assert "is not on the allowed list" in refusal(policy, "http://10.0.0.5/").message


# -- check_resolved -------------------------------------------------------------------


async def test_check_resolved_refuses_localhost() -> None:
    with pytest.raises(UrlBlocked, match="localhost is a loopback name"):
        await UrlPolicy().check_resolved("http://localhost:8000/")


async def test_check_resolved_refuses_a_name_that_resolves_to_a_private_address() -> None:
    name = socket.gethostname()  # /etc/hosts maps it to a local address on most machines
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except OSError:
        pytest.skip(f"{name} does not resolve here")
    if not all(_is_refused(a) for a in addresses):
        pytest.skip(f"{name} resolves to a public address here: {addresses}")
    url = f"http://{name}:8000/"
    assert UrlPolicy().check(url) == url  # no DNS in the sync check
    with pytest.raises(UrlBlocked, match=rf"{name} resolves to .*, a .*address") as caught:
        await UrlPolicy().check_resolved(url)
    assert PRIVATE_HINT in caught.value.hint
    assert await UrlPolicy(block_private=False).check_resolved(url) == url
    assert await UrlPolicy(allowed_domains=(name,)).check_resolved(url) == url


def _is_refused(address: str) -> bool:
    host = f"[{address.split('%')[0]}]" if ":" in address else address
    try:
        UrlPolicy().check(f"http://{host}/")
    except UrlBlocked:
        return True
    return False


async def test_check_resolved_lets_unresolvable_names_through() -> None:
    url = "http://no-such-host.invalid/"
    assert await UrlPolicy().check_resolved(url) == url


async def test_check_resolved_resolves_within_the_budget() -> None:
    with pytest.raises(BudgetExceeded):
        await UrlPolicy().check_resolved("http://example.invalid/", budget=Budget(0))
    # Addresses, and policies that do not block private ones, need no DNS and no time.
    assert await UrlPolicy().check_resolved("http://8.8.8.8/", budget=Budget(0))
    assert await UrlPolicy(block_private=False).check_resolved(
        "http://example.invalid/", budget=Budget(0)
    )


async def test_check_resolved_runs_the_sync_check_first() -> None:
    with pytest.raises(UrlBlocked, match="file: is not allowed"):
        await UrlPolicy().check_resolved("file:///etc/passwd")
    with pytest.raises(UrlBlocked, match=r"127\.0\.0\.1 is a loopback address"):
        await UrlPolicy().check_resolved("http://0x7f.1/", budget=Budget(0))


# -- rules with a port or a path ------------------------------------------------------


def test_an_allow_rule_with_a_port_allows_that_port_only() -> None:
    policy = UrlPolicy(allowed_domains=("127.0.0.1:8000", "intranet.example:8443", "[::1]:9000"))
    for url in [
        "http://127.0.0.1:8000/admin",
        "https://intranet.example:8443/",
        "http://app.intranet.example:8443/x",
        "http://[::1]:9000/",
        "http://0x7f.1:8000/",  # the same address, written otherwise
    ]:
        assert policy.check(url) == url
    for url, shown in [
        ("http://127.0.0.1:8001/", "127.0.0.1:8001"),
        ("http://127.0.0.1/", "127.0.0.1"),  # port 80
        ("https://intranet.example/", "intranet.example"),  # port 443
        ("http://[::1]:9001/", "::1:9001"),
    ]:
        assert f"{shown} is not on the allowed list" in refusal(policy, url).message


def test_a_rule_without_a_port_keeps_every_port() -> None:
    policy = UrlPolicy(allowed_domains=("127.0.0.1", "example.com"))
    for url in ["http://127.0.0.1:1/", "http://127.0.0.1:65535/", "https://www.example.com:8443/"]:
        assert policy.check(url) == url


def test_default_ports_match_a_rule_that_names_them() -> None:
    policy = UrlPolicy(allowed_domains=("example.com:443", "example.org:80"))
    assert policy.check("https://example.com/") == "https://example.com/"
    assert policy.check("http://example.org/") == "http://example.org/"
    assert "not on the allowed list" in refusal(policy, "http://example.com/").message


def test_a_block_rule_with_a_port_blocks_that_port_only() -> None:
    policy = UrlPolicy(blocked_domains=("evil.example:8080",))
    assert (
        "evil.example is on the blocked list"
        in refusal(policy, "http://evil.example:8080/").message
    )
    assert policy.check("http://evil.example/") == "http://evil.example/"


def test_an_allow_rule_with_a_path_allows_plain_http_under_it_only() -> None:
    policy = UrlPolicy(allowed_domains=("127.0.0.1:8000/demo/",))
    for url in [
        "http://127.0.0.1:8000/demo/",
        "http://127.0.0.1:8000/demo",
        "http://127.0.0.1:8000/demo/form.html?x=1",
        "http://127.0.0.1:8000/demo/flow/step1.html",
    ]:
        assert policy.check(url) == url
    for url in [
        "http://127.0.0.1:8000/admin/",
        "http://127.0.0.1:8000/demox/",
        "http://127.0.0.1:8000/demo/../admin/",
        "http://127.0.0.1:8000/demo/%2e%2E/admin/",
        "http://127.0.0.1:8000/demo\\..\\admin/",
        "http://127.0.0.1:8000/",
        "https://127.0.0.1:8000/demo/",  # a tunnel hides its path: never opened by a path
        "http://127.0.0.1:8001/demo/",
    ]:
        assert "is not on the allowed list" in refusal(policy, url).message, url


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ("http://evil.example/", "a rule names a host, not a URL"),
        ("evil.example:", "an empty port"),
        ("evil.example:99999", "is not a port"),
        ("evil.example:80x", "is not a port"),
        ("[::1", "no closing bracket"),
        ("fe80::zz", "not an IPv6 address"),
        ("bad host", "not a host name or address"),
        ("", "no host"),
    ],
)
def test_a_rule_that_cannot_be_read_is_refused_at_once(rule: str, why: str) -> None:
    for lists in ({"allowed_domains": (rule,)}, {"blocked_domains": (rule,)}):
        with pytest.raises(UrlBlocked, match="malformed URL rule") as caught:
            UrlPolicy(**lists)  # type: ignore[arg-type]
        assert why in caught.value.message
        assert "host:port" in caught.value.hint


def test_a_block_rule_cannot_name_a_path() -> None:
    with pytest.raises(UrlBlocked, match="a block rule can't name a path"):
        UrlPolicy(blocked_domains=("evil.example/admin",))


def test_a_malformed_port_in_a_url_is_refused() -> None:
    assert "malformed port" in refusal(UrlPolicy(), "http://example.com:99999/").message
    assert "malformed port" in refusal(UrlPolicy(), "http://example.com:8o/").message


# -- connect_addresses: what the egress proxy may connect to --------------------------


async def test_connect_addresses_checks_every_address_it_returns() -> None:
    budget = Budget(1_000)
    mapped = UrlPolicy(host_map=(("*.corp.example", "10.0.0.7"), ("pub.example", "8.8.8.8")))
    addresses, port = await mapped.connect_addresses("https://pub.example/", budget=budget)
    assert ([str(a) for a in addresses], port) == (["8.8.8.8"], 443)
    with pytest.raises(UrlBlocked, match=r"app\.corp\.example resolves to 10\.0\.0\.7, a private"):
        await mapped.connect_addresses("http://app.corp.example:81/", budget=budget)
    allowed = UrlPolicy(
        allowed_domains=("corp.example:81",), host_map=(("*.corp.example", "10.0.0.7"),)
    )
    addresses, port = await allowed.connect_addresses("http://app.corp.example:81/", budget=budget)
    assert ([str(a) for a in addresses], port) == (["10.0.0.7"], 81)
    with pytest.raises(UrlBlocked, match=r"127\.0\.0\.1 is a loopback address"):
        await UrlPolicy().connect_addresses("http://127.0.0.1:8000/", budget=budget)
    with pytest.raises(OSError):
        await UrlPolicy().connect_addresses("http://no-such-host.invalid/", budget=budget)


async def test_check_resolved_uses_the_host_map() -> None:
    policy = UrlPolicy(host_map=(("sneaky.example", "127.0.0.1"),))
    with pytest.raises(UrlBlocked, match=r"sneaky\.example resolves to 127\.0\.0\.1"):
        await policy.check_resolved("http://sneaky.example/")


def test_a_host_map_entry_must_be_an_address() -> None:
    with pytest.raises(UrlBlocked, match="not one"):
        UrlPolicy(host_map=(("a.example", "b.example"),))


def test_extra_allowed_rules_let_in_what_they_match_and_nothing_else() -> None:
    # The dashboard's demo pages: allowed, though private, without an allow list.
    policy = UrlPolicy(extra_allowed=("127.0.0.1:8000/demo/",))
    assert policy.check("http://127.0.0.1:8000/demo/form.html")
    assert policy.check("https://example.com/")  # no allow list was made
    for url in ["http://127.0.0.1:8000/admin/", "http://127.0.0.1:8001/demo/"]:
        assert "127.0.0.1 is a loopback address" in refusal(policy, url).message
    # Under an allow list, they are allowed too.
    listed = UrlPolicy(allowed_domains=("example.com",), extra_allowed=("127.0.0.1:8000/demo/",))
    assert listed.check("http://127.0.0.1:8000/demo/")
    assert "not on the allowed list" in refusal(listed, "http://127.0.0.1:8000/admin/").message
