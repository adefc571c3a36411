"""Drives the Epsilon Jupyter kernel with jupyter_client over loopback.

Run by tests/jupyter.rs with JUPYTER_DATA_DIR pointing at a directory where
`epsilon kernel install` put the kernelspec. Every check raises on failure;
the last line printed is "all kernel checks passed".
"""

import base64
import contextlib
import queue
import struct
import sys
import time

from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

TIMEOUT = 60


def run(kc, code, timeout=TIMEOUT, **options):
    """Executes code; returns (reply content, iopub messages of the request)."""
    msg_id = kc.execute(code, **options)
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    messages = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    return reply["content"], messages


def of_type(messages, kind):
    return [m["content"] for m in messages if m["msg_type"] == kind]


def expect(condition, what, detail=""):
    if not condition:
        raise AssertionError(f"{what}: {detail}")
    print(f"ok: {what}")


def png_size(data):
    raw = base64.b64decode(data)
    expect(raw[:8] == b"\x89PNG\r\n\x1a\n", "the plot is a PNG", raw[:8])
    return struct.unpack(">II", raw[16:24])


def check_values_and_status(kc):
    reply, messages = run(kc, "(+ 1 2)")
    kinds = [m["msg_type"] for m in messages]
    expect(kinds[0] == "status" and messages[0]["content"]["execution_state"] == "busy",
           "busy comes first", kinds)
    expect(kinds[1] == "execute_input", "the input is echoed", kinds)
    expect(reply["status"] == "ok", "a value cell succeeds", reply)
    result = of_type(messages, "execute_result")
    expect(len(result) == 1 and result[0]["data"]["text/plain"] == "3",
           "the value is the result", result)
    expect(isinstance(result[0].get("transient", {}), dict),
           "a result's transient part, when sent, is an object", result)
    expect(result[0]["execution_count"] == reply["execution_count"],
           "result and reply share the count", (result, reply))

    reply, messages = run(kc, '(define (f x) (* x x)) (println "hello" (f 4)) (display "no newline")')
    text = "".join(s["text"] for s in of_type(messages, "stream") if s["name"] == "stdout")
    expect(text == "hello 16\nno newline", "printed output is streamed", repr(text))
    expect(not of_type(messages, "execute_result"), "a void value shows nothing", messages)

    _, messages = run(kc, '(eprintln "careful:" 3)')
    streams = of_type(messages, "stream")
    expect(streams == [{"name": "stderr", "text": "careful: 3\n"}],
           "eprintln goes to the notebook's stderr stream", streams)


def check_error(kc):
    reply, messages = run(kc, "(define y 1)\n(car y)")
    expect(reply["status"] == "error", "an error cell replies error", reply)
    errors = of_type(messages, "error")
    expect(len(errors) == 1, "one error message", errors)
    error = errors[0]
    expect(error["ename"] == "TypeError", "the error names its kind", error)
    expect("car" in error["evalue"] or "pair" in error["evalue"], "the message says what failed", error)
    expect(any(f"<cell {reply['execution_count']}>:2:" in line for line in error["traceback"]),
           "the traceback points at the cell's line", error["traceback"])
    reply, messages = run(kc, "(f 5)")
    expect(of_type(messages, "execute_result")[0]["data"]["text/plain"] == "25",
           "the kernel goes on after an error", messages)

    # "Run all": cells queued behind a failing one are aborted, not run.
    # The failing cell runs long enough (~0.3 s) for the second request to
    # be sent while it runs, also on a busy machine.
    failing = kc.execute("(let loop ((i 0)) (if (< i 2000000) (loop (+ i 1)) (car i)))")
    queued = kc.execute('(println "queued cell ran")')
    replies = {}
    while len(replies) < 2:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        replies[reply["parent_header"]["msg_id"]] = reply["content"]
    expect(replies[failing]["status"] == "error" and replies[queued]["status"] == "aborted",
           "a cell queued behind a failed one is aborted", replies)
    reply, messages = run(kc, '(println "later cells run")')
    streams = [s["text"] for s in of_type(messages, "stream")]
    expect(reply["status"] == "ok" and streams == ["later cells run\n"],
           "a cell sent after the abort runs", (reply, streams))


def check_formula_and_tensor(kc):
    _, messages = run(kc, "(grad '(* x (sin y)) '(x y))")
    data = of_type(messages, "execute_result")[0]["data"]
    expect("text/latex" in data and "\\sin" in data["text/latex"] and data["text/latex"].startswith("$"),
           "a formula comes as LaTeX", data)
    _, messages = run(kc, "(reshape (linspace 1 6 6) '(2 3))")
    data = of_type(messages, "execute_result")[0]["data"]
    expect("<table" in data.get("text/html", "") and data["text/html"].count("<tr>") == 2,
           "a tensor comes as an HTML table", data)


def check_plot(kc, directory):
    _, messages = run(kc, f'(plot (linspace 0 1 30) (exp (linspace 0 1 30)) "{directory}/k.png" :width 400 :height 300)')
    shown = of_type(messages, "display_data")
    expect(len(shown) == 1, "a plot is displayed once", messages)
    data = shown[0]["data"]
    expect(png_size(data["image/png"]) == (400, 300), "the inline PNG has the chart's size")
    expect(data["image/svg+xml"].startswith("<svg"), "the chart also comes as SVG")


def check_progress(kc):
    code = """(define X (reshape (linspace -1 1 64) '(64 1)))
(define (loss w x y) (mean (let ((r (- (* w x) y))) (* r r))))
(first (fit loss 0.0 (list X (* 3 X)) :epochs 200 :batch-size 8 :optimizer (adam :lr 0.05)))"""
    _, messages = run(kc, code)
    shown = of_type(messages, "display_data")
    updates = of_type(messages, "update_display_data")
    expect(len(shown) == 1 and shown[0]["transient"].get("display_id"),
           "fit displays one progress bar with a display id", shown)
    display_id = shown[0]["transient"]["display_id"]
    expect(updates and all(u["transient"]["display_id"] == display_id for u in updates),
           "fit updates its bar in place", updates[:2])
    last = updates[-1]["data"]["text/plain"]
    expect("1600/1600" in last and "loss" in last, "the last update shows the finished bar", last)
    value = float(of_type(messages, "execute_result")[0]["data"]["text/plain"])
    expect(abs(value - 3) < 1e-3, "fit's result is the fitted weight", value)


def check_interrupt(km, kc):
    msg_id = kc.execute("(let loop ((i 0)) (loop (+ i 1)))")
    time.sleep(1.5)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=20)
    expect(reply["parent_header"]["msg_id"] == msg_id, "the interrupted cell replies")
    expect(reply["content"]["status"] == "error" and reply["content"]["ename"] == "Interrupted",
           "an interrupt stops a running loop", reply["content"])
    _, messages = run(kc, "(* 6 7)")
    expect(of_type(messages, "execute_result")[0]["data"]["text/plain"] == "42",
           "the kernel runs cells after an interrupt", messages)


def check_complete_inspect(kc):
    kc.complete("(define z (gra", 14)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect("grad" in reply["matches"] and reply["cursor_start"] == 11 and reply["cursor_end"] == 14,
           "completion offers grad for gra", reply)
    kc.complete("(defi", 5)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect("define" in reply["matches"], "completion offers special forms", reply)
    kc.inspect("(grad f)", 3)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect(reply["found"] and "grad" in reply["data"]["text/plain"], "inspection shows grad's doc", reply)
    kc.inspect("(no-such-name 1)", 3)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect(not reply["found"], "inspection of an unbound name finds nothing", reply)
    kc.is_complete("(+ 1")
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect(reply["status"] == "incomplete", "an open bracket is incomplete", reply)
    kc.is_complete("(+ 1 2)")
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect(reply["status"] == "complete", "a closed form is complete", reply)
    for code in ["(+ 1 2))", ")"]:
        kc.is_complete(code)
        reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
        expect(reply["status"] == "invalid", f"{code} is invalid", reply)
    kc.complete(":lo", 3)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect(":log-x" in reply["matches"] and reply["cursor_start"] == 0,
           "keywords complete", reply)
    for code in [":doc map", "?map"]:
        reply, messages = run(kc, code)
        pages = reply["payload"]
        expect(len(pages) == 1 and pages[0]["source"] == "page"
               and "(map " in pages[0]["data"]["text/plain"],
               f"{code} pages the documentation", reply)
        expect(not of_type(messages, "execute_result"), f"{code} has no result", messages)
    reply, messages = run(kc, "?no-such-name")
    expect(reply["status"] == "error" and "no-such-name is not defined" in reply["evalue"],
           "?NAME of an unbound name is an error", reply)
    # :time and (time ...) both report on the stderr stream.
    for code in [":time (+ 1 2)", "(time (+ 1 2))"]:
        _, messages = run(kc, code)
        streams = of_type(messages, "stream")
        expect([s["name"] for s in streams] == ["stderr"] and streams[0]["text"].startswith("time: "),
               code + " reports its time on stderr", streams)


def check_language_info(info):
    language = info["language_info"]
    expect(language.get("pygments_lexer") and language.get("codemirror_mode"),
           "language_info names a Pygments lexer and a CodeMirror mode", language)
    try:
        from pygments.lexers import get_lexer_by_name
    except ImportError:
        print("skipped: Pygments is not installed, so the lexer's name is not looked up")
        return
    lexer = get_lexer_by_name(language["pygments_lexer"])
    expect(lexer is not None, "Pygments knows the lexer", language["pygments_lexer"])


def history(kc, **request):
    kc.history(raw=True, output=False, **request)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    expect(reply["status"] == "ok", "a history request is answered", (request, reply))
    return reply["history"]


def check_history(kc):
    first, _ = run(kc, "(define h 5)")
    run(kc, "(* h 2)")
    run(kc, "(* h 2)")
    run(kc, "(* h 3)", store_history=False)
    tail = history(kc, hist_access_type="tail", n=3)
    count = first["execution_count"]
    expect([entry[1:] for entry in tail] == [[count, "(define h 5)"], [count + 1, "(* h 2)"],
                                             [count + 2, "(* h 2)"]],
           "tail gives the last cells with their execution counts", tail)
    found = history(kc, hist_access_type="search", pattern="([*] h*")
    expect([entry[2] for entry in found] == ["(* h 2)", "(* h 2)"],
           "a search without n or unique gives every match", found)
    found = history(kc, hist_access_type="search", pattern="([*] h*", unique=True)
    expect(len(found) == 1, "a unique search gives one of equal inputs", found)
    session = tail[0][0]
    kc.history(raw=True, output=True, hist_access_type="range", session=session,
               start=count + 1, stop=count + 2)
    ranged = kc.get_shell_msg(timeout=TIMEOUT)["content"]["history"]
    expect(ranged == [[session, count + 1, ["(* h 2)", "10"]]],
           "a range with output pairs input and result", ranged)


def check_read_line(kc):
    msg_id = kc.execute('(define name (read-line "name? ")) (println "hello" name)', allow_stdin=True)
    request = kc.get_stdin_msg(timeout=TIMEOUT)
    expect(request["msg_type"] == "input_request" and request["content"]["prompt"] == "name? "
           and request["parent_header"]["msg_id"] == msg_id,
           "read-line asks the front end for a line", request)
    kc.input("Ada")
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    expect(reply["content"]["status"] == "ok", "the cell goes on with the line", reply["content"])
    _, messages = run(kc, "name")
    expect(of_type(messages, "execute_result")[0]["data"]["text/plain"] == '"Ada"',
           "read-line gives the line typed", messages)
    reply, _ = run(kc, "(read-line)", allow_stdin=False)
    expect(reply["status"] == "error" and "allow_stdin" in reply["evalue"],
           "read-line without stdin says why it cannot read", reply)


def check_bad_signature(kc):
    forged = Session(key=b"not-the-key", username="intruder")
    content = {"code": '(println "forged")', "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
    forged.send(kc.shell_channel.socket, "execute_request", content)
    try:
        reply = kc.get_shell_msg(timeout=2)
        raise AssertionError(f"a forged message was answered: {reply}")
    except queue.Empty:
        print("ok: a message with a bad signature gets no reply")
    _, messages = run(kc, "(+ 40 2)")
    expect(of_type(messages, "execute_result")[0]["data"]["text/plain"] == "42",
           "the kernel stays up after a forged message", messages)
    expect(not any("forged" in s["text"] for s in of_type(messages, "stream")),
           "the forged code did not run")


def check_signal_interrupt(data_dir):
    """A kernelspec asking for SIGINT interrupts stops a cell too."""
    import json, os
    spec_dir = os.path.join(data_dir, "kernels", "epsilon-signal")
    os.makedirs(spec_dir, exist_ok=True)
    with open(os.path.join(data_dir, "kernels", "epsilon", "kernel.json")) as f:
        spec = json.load(f)
    spec["interrupt_mode"] = "signal"
    with open(os.path.join(spec_dir, "kernel.json"), "w") as f:
        json.dump(spec, f)
    with started("epsilon-signal") as (km, kc):
        check_interrupt(km, kc)


@contextlib.contextmanager
def started(name):
    """A running kernel of kernelspec `name` and a ready client; shut down after."""
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def main():
    directory = sys.argv[1]
    with started("epsilon") as (km, kc):
        kc.kernel_info()
        info = kc.get_shell_msg(timeout=TIMEOUT)["content"]
        expect(info["language_info"]["name"] == "epsilon", "kernel_info names the language", info)
        check_language_info(info)
        check_values_and_status(kc)
        check_error(kc)
        check_formula_and_tensor(kc)
        check_plot(kc, directory)
        check_progress(kc)
        check_interrupt(km, kc)
        check_complete_inspect(kc)
        check_history(kc)
        check_read_line(kc)
        check_bad_signature(kc)
    expect(not km.is_alive(), "the kernel exits on shutdown")
    check_signal_interrupt(sys.argv[2])
    print("all kernel checks passed")


if __name__ == "__main__":
    main()
