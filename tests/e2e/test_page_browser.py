#!/usr/bin/env python3
"""The on-call page in a real browser: headless Chromium driven through Selenium (Debian's chromium,
chromium-driver and python3-selenium) against a real `faultline run` on 127.0.0.1.

The page loads; an incident appears live after a line is appended (no reload: a marker set in the page survives);
a root cause lists its symptom under it; the filters narrow the list; the incident view shows the decisive lines
marked; hostile log text is shown as text (no element injected, no alert); at phone width (375 px) nothing scrolls
sideways; the browser logs no error. With server.api_token_file the API answers 401 without the token or a session,
and the login form gets the browser a session cookie (HttpOnly, SameSite=Strict). Screenshots go to the artifacts
directory: $FAULTLINE_ARTIFACTS_DIR, else <build dir>/test-artifacts/test_page_browser, else the work dir."""
import json
import os
import shutil
import signal
import sys

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException, WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
except ImportError:
    # python3-selenium is a Debian package: when another python3 comes first on PATH, run under Debian's.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3") and not os.environ.get("FL_REEXEC"):
        os.environ["FL_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    webdriver = None

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CORPUS = os.path.join(tl.SOURCE_DIR, "tests", "corpus", "real", "engine_core_fatal__johnpfeiffer-b300-flashmla-tma.log")
# Raised as an early warning, escalated to critical, then resolved: three revisions of one incident.
ESCALATE_RULE = r"""
id: e2e-escalate
title: "E2E escalation"
severity: critical
events:
  warm:
    regex: 'HEAT WARN'
  hot:
    regex: 'HEAT FAIL'
  cool:
    regex: 'HEAT COOL'
sequence:
  - event: warm
    severity: warning
  - event: hot
lifetime:
  quiet: 1h
  resolve_on: [cool]
"""
HOSTILE = ('BOOM 666 <script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2"> '
           '"quoted" \'single\' \x1b[31mred\x1b[0m \x07bell end')


def artifacts_dir(work):
    d = os.environ.get("FAULTLINE_ARTIFACTS_DIR")
    if not d and os.environ.get("FAULTLINE_BUILD_DIR"):
        d = os.path.join(os.environ["FAULTLINE_BUILD_DIR"], "test-artifacts", "test_page_browser")
    d = d or os.path.join(work.path, "artifacts")
    os.makedirs(d, exist_ok=True)
    return d


def descendants(pid):
    """Pids of every process below `pid` (read from /proc), deepest last."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class Browser:
    """One headless Chromium with a private profile; quit (and every process it started killed) at cleanup."""

    def __init__(self, work, name):
        if webdriver is None:
            raise tl.Skip("python3-selenium is not installed (scripts/packages-test.txt)")
        for tool in (CHROMIUM, CHROMEDRIVER):
            if not os.path.exists(tool):
                raise tl.Skip("%s is not installed (scripts/packages-test.txt)" % tool)
        opts = Options()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-extensions", "--disable-background-networking", "--window-size=1280,900",
                  "--user-data-dir=" + os.path.join(work.path, "chromium-" + name)):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.service = Service(CHROMEDRIVER, log_path=os.path.join(work.path, "chromedriver-%s.log" % name))
        self.driver = None
        work.on_cleanup(self.quit)
        self.driver = webdriver.Chrome(service=self.service, options=opts)
        self.driver.set_script_timeout(20)

    def quit(self):
        pids = descendants(self.service.process.pid) if getattr(self.service, "process", None) else []
        try:
            if self.driver:
                self.driver.quit()
        except WebDriverException:
            pass
        for pid in reversed(pids):  # whatever quit() left: chromium's helpers, by their pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.service.stop()
        except Exception:  # noqa: BLE001 - already gone
            pass

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def text(self, selector):
        return self.js("const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", selector)

    def wait(self, script, what, timeout=20, *args):
        return wait_until(lambda: self.js(script, *args), timeout, interval=0.1, what=what)

    def errors(self):
        return [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def no_sideways_scroll(self, what):
        over = self.js("""
            const w = document.documentElement.clientWidth;
            const wide = [...document.querySelectorAll('body *')].filter(e => {
              const r = e.getBoundingClientRect();
              return r.width > 0 && r.height > 0 && r.right > w + 1 && !e.closest('details:not([open])');
            }).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));
            return {w, scroll: document.documentElement.scrollWidth, wide: wide.slice(0, 5)};""")
        check(over["scroll"] <= over["w"] and not over["wide"], "%s scrolls sideways: %s" % (what, over))


def test(work):
    shots = artifacts_dir(work)
    work.write_rule("e2e-boom.yaml", tl.BOOM_RULE)
    work.write_rule("e2e-escalate.yaml", ESCALATE_RULE)
    catalog = os.path.join(tl.SOURCE_DIR, "rules")
    hostile_file = os.path.join(work.logs, 'x"><img src=x onerror="window.__pwned=3">.log')
    open(hostile_file, "w").close()
    fl = tl.Daemon(work, ["--source", os.path.join(work.logs, "*.log"), "--rules", catalog]).start()
    b = Browser(work, "open")
    d = b.driver
    d.get(fl.base + "/")
    b.wait("return document.body.dataset.rendered >= 1", "the page rendered")
    b.wait("return /reading 2 files/.test(document.getElementById('reading').textContent)", "the reading header")
    b.wait("return document.getElementById('live').textContent.includes('live')", "the live stream")
    check("No incidents" in b.text("#list"), "empty list: %s" % b.text("#list"))
    loaded = b.js("window.__marker = 'still here'; return window.faultlinePage.loadedAt;")
    d.save_screenshot(os.path.join(shots, "01-empty.png"))

    # Live: a line appended shows up without a reload.
    work.append("BOOM 1")
    b.wait("return document.querySelectorAll('#list .card').length === 1", "the incident, live")
    check(b.js("return window.__marker") == "still here" and b.js("return window.faultlinePage.loadedAt") == loaded,
          "the page reloaded for a live update")
    check("E2E boom 1" in b.text("#list .card .title"), "card title: %s" % b.text("#list .card"))
    b.wait("return /last line (just now|\\d+ s ago)/.test(document.getElementById('reading').textContent)",
           "the last line's age")

    # A root cause with its symptom under it.
    with open(CORPUS, "rb") as f:
        corpus = f.read()
    with open(work.log_file, "ab") as f:
        f.write(corpus)
    b.wait("return [...document.querySelectorAll('#list > .card')].some(c => c.querySelector('.symptoms .card'))",
           "a root cause with its symptom", timeout=30)
    root = b.js("""const c = [...document.querySelectorAll('#list > .card')].find(c => c.querySelector('.symptoms'));
                   return {rule: c.querySelector('.rule').textContent,
                           symptom: c.querySelector('.symptoms .card .rule').textContent};""")
    check(root == {"rule": "cuda-tma-descriptor-error", "symptom": "engine-dead"}, "grouping: %s" % root)
    check(b.js("return document.querySelectorAll('#list > .card .cause').length") == 0,
          "a grouped symptom repeats its cause")
    work.append(HOSTILE)
    work.append("BOOM 777 from a file with a hostile name", path=hostile_file)
    b.wait("return [...document.querySelectorAll('#list .card .title')].some(t => t.textContent.includes('666'))",
           "the hostile line's incident")
    b.wait("return [...document.querySelectorAll('#list .card .stream')].some(t => t.textContent.includes("
           "'x\"><img src=x onerror='))", "the incident of the file with a hostile name")
    d.save_screenshot(os.path.join(shots, "02-list.png"))
    shutil.copyfile(os.path.join(shots, "02-list.png"), os.path.join(shots, "page.png"))

    # Hostile text is text.
    check(b.js("return document.querySelectorAll('img, #list script').length") == 0, "an element was injected")
    check(b.js("return window.__pwned") is None, "injected script ran")
    try:
        d.switch_to.alert
        check(False, "an alert opened")
    except NoAlertPresentException:
        pass
    check(b.js("return [...document.querySelectorAll('.decisive')].some(e => e.textContent.includes("
               "'<script>window.__pwned=1;alert(1)</script>'))"), "the hostile line is not shown as text")

    # Filters.
    total = b.js("return document.querySelectorAll('#list .card').length")
    Select(d.find_element(By.NAME, "severity")).select_by_value("critical")
    b.wait("return [...document.querySelectorAll('#list .card')].every(c => c.classList.contains('sev-critical'))"
           " && document.querySelectorAll('#list .card').length >= 3", "severity filter")
    Select(d.find_element(By.NAME, "severity")).select_by_value("")
    box = d.find_element(By.NAME, "q")
    box.send_keys("boom 1")
    b.wait("return document.querySelectorAll('#list .card').length === 1 && "
           "document.querySelector('#list .card .title').textContent === 'E2E boom 1'", "text filter")
    check("#?q=boom" in d.current_url, "the filter is not in the address: %s" % d.current_url)
    d.find_element(By.CSS_SELECTOR, "#filters button[type=reset]").click()
    b.wait("return document.querySelectorAll('#list .card').length === arguments[0]", "filters cleared", 20, total)
    Select(d.find_element(By.NAME, "rule")).select_by_value("engine-dead")
    b.wait("return [...document.querySelectorAll('#list .card .rule')].map(e => e.textContent).join() === "
           "'engine-dead'", "rule filter")
    check(b.text("#list .card .cause a") == "cuda-tma-descriptor-error", "the symptom links its root cause")
    d.find_element(By.CSS_SELECTOR, "#filters button[type=reset]").click()
    b.wait("return document.querySelectorAll('#list .card').length === arguments[0]", "filters cleared", 20, total)

    # The incident view: decisive lines marked, the symptom linked back, copy buttons.
    d.execute_script("""[...document.querySelectorAll('#list > .card')].find(c => c.querySelector('.symptoms'))
                        .querySelector('.head .title').click();""")
    b.wait("return /TMA/.test(document.querySelector('#incident-view .incident-title').textContent)", "the TMA view")
    hit_lines = b.js("return [...document.querySelectorAll('.ev.hit code')].map(e => e.textContent)")
    check(any("Failed to initialize the TMA descriptor" in t for t in hit_lines), "decisive lines: %s" % hit_lines)
    check(b.js("return [...document.querySelectorAll('.ev.hit .gutter')].every(g => g.textContent.startsWith('▶'))"),
          "decisive lines are not marked")
    check(b.js("return document.querySelector('details.context .ev.hit')") is None, "a decisive line was folded")
    check("engine-dead" in b.text("#incident-view table.fields"), "the root cause does not list its symptom")
    repro = b.js("return document.querySelector('.copy-repro').dataset.copy")
    check(repro == "faultline scan --explain " + work.log_file, "reproduction: %s" % repro)
    incident_id = b.js("return document.querySelector('.copy-id').dataset.copy")
    check(len(incident_id) == 16 and incident_id in d.current_url, "copy id: %s" % incident_id)
    d.find_element(By.CSS_SELECTOR, ".copy-id").click()
    b.wait("return document.querySelector('.copy-id').textContent !== 'copy id'", "copy feedback")
    check("first seen" in b.text("#incident-view .timeline"), "timeline: %s" % b.text("#incident-view .timeline"))
    d.save_screenshot(os.path.join(shots, "03-incident.png"))

    # Phone width.
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True})
    b.wait("return document.documentElement.clientWidth === 375", "phone width")
    b.no_sideways_scroll("the incident view at 375 px")
    d.save_screenshot(os.path.join(shots, "04-phone-incident.png"))
    d.get(fl.base + "/#")  # a reload here is fine: the live check is done
    b.wait("return document.querySelectorAll('#list .card').length === arguments[0]", "the list at 375 px", 20, total)
    b.no_sideways_scroll("the list at 375 px")
    d.save_screenshot(os.path.join(shots, "05-phone-list.png"))
    d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    # Rules view.
    d.find_element(By.ID, "nav-rules").click()
    b.wait("return document.querySelector('[data-rule=\"e2e-boom\"]')", "the rules view")
    boom_rule = b.text("[data-rule=\"e2e-boom\"]")
    check("3 matching lines" in boom_rule and "3 incidents" in boom_rule, "rule card: %s" % boom_rule)
    check(b.js("return document.querySelectorAll('.rule-card').length") >= 30, "the catalog is listed")
    d.save_screenshot(os.path.join(shots, "06-rules.png"))

    # An incident that escalated and resolved while no page was open: a page opened afterwards shows its timeline
    # from the store's history (this page never saw its revisions arrive).
    def escalation():
        status, _, body = tl.http_get(fl.base + "/api/v1/incidents?rule=e2e-escalate")
        found = json.loads(body)["incidents"] if status == 200 else []
        return found[0] if found else None
    d.get("about:blank")
    for line, want in (("HEAT WARN", ("warning", "firing")), ("HEAT FAIL", ("critical", "firing")),
                       ("HEAT COOL", ("critical", "resolved"))):
        work.append("%s on the e2e node" % line)
        wait_until(lambda: (lambda i: i and (i["severity"], i["status"]) == want)(escalation()), 20,
                   what="the e2e-escalate incident at %s" % (want,))
    escalated = escalation()
    check(escalated["revision"] == 3, "escalation revisions: %s" % escalated)
    d.get(fl.base + "/#incident/" + escalated["id"])
    b.wait("return document.querySelector('#incident-view .timeline li[data-revision=\"3\"]')", "the timeline")
    steps = b.js("return [...document.querySelectorAll('#incident-view .timeline li')]"
                 ".map(li => [li.dataset.change, li.querySelector('span').textContent])")
    check([c for c, _ in steps] == ["first", "severity", "status"], "timeline steps: %s" % steps)
    check("warning" in steps[0][1] and "escalated warning → critical" in steps[1][1] and "resolved" in steps[2][1],
          "timeline text: %s" % steps)
    view_text = b.text("#incident-view")
    check("null" not in view_text and "undefined" not in view_text, "a missing part shown as text: %s" % view_text)
    d.save_screenshot(os.path.join(shots, "07-timeline.png"))

    errors = b.errors()
    check(not errors, "browser console errors: %s" % errors)
    b.quit()
    check(fl.stop() == 0, "faultline exited non-zero")

    # With a token: the API is closed without it; the login form opens a session.
    token = work.file("api-token", "page-secret-7\n")
    secured = tl.Daemon(work, ["--source", work.log_file], name="secured", state=os.path.join(work.path, "state-2"),
                        config="server:\n  api_token_file: %s\n" % token).start()
    for path in ("/api/v1/incidents", "/api/v1/status", "/api/v1/events"):
        check(tl.http_get(secured.base + path)[0] == 401, "%s answered without the token" % path)
    for path in ("/metrics", "/healthz", "/readyz", "/"):
        check(tl.http_get(secured.base + path)[0] == 200, "%s needs no token" % path)
    check(tl.http_get(secured.base + "/api/v1/incidents", {"Authorization": "Bearer page-secret-7"})[0] == 200,
          "the bearer token no longer works")
    b2 = Browser(work, "secured")
    d2 = b2.driver
    d2.get(secured.base + "/")
    b2.wait("return !document.getElementById('login-view').hidden", "the login form")
    d2.save_screenshot(os.path.join(shots, "08-login.png"))
    d2.find_element(By.ID, "login-token").send_keys("page-secret-7")
    d2.find_element(By.CSS_SELECTOR, "#login-form button[type=submit]").click()
    b2.wait("return !document.getElementById('incidents-view').hidden && document.body.dataset.rendered >= 1",
            "logged in")
    work.append("BOOM 2")
    b2.wait("return [...document.querySelectorAll('#list .card .title')].some(t => t.textContent === 'E2E boom 2')",
            "a live incident after login")
    cookies = {c["name"]: c for c in d2.get_cookies()}
    session = cookies.get("faultline_session")
    check(session and session.get("httpOnly") and session.get("sameSite") == "Strict", "cookie: %s" % cookies)
    check(b2.js("return document.cookie") == "", "a script can read the session cookie")
    errors = b2.errors()
    check(not errors, "browser console errors after login: %s" % errors)
    d2.find_element(By.ID, "logout").click()
    b2.wait("return !document.getElementById('login-view').hidden", "logged out")
    b2.quit()
    check(secured.stop() == 0, "faultline (token) exited non-zero")


if __name__ == "__main__":
    tl.main(test)
