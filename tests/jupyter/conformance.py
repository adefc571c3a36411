"""The Jupyter project's kernel conformance suite, jupyter_kernel_test,
configured for Epsilon.

Run by tests/jupyter.rs (`python3 tests/jupyter/conformance.py`) with
JUPYTER_PATH pointing at a directory where `epsilon kernel install` put
the kernelspec. Every message the suite receives is checked against the
message schemas of jupyter_kernel_test. The one test left unconfigured
is test_clear_output: no Epsilon function clears a cell's output.
The kernel greets each IOPub subscription with an iopub_welcome message,
so the suite's IopubWelcomeTests run too.
"""

import unittest

import jupyter_kernel_test

# Seconds to wait for a message the suite would wait for forever.
TIMEOUT = 60


class EpsilonKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "epsilon"
    language_name = "epsilon"
    file_extension = ".lisp"

    code_hello_world = '(println "hello, world")'
    code_stderr = '(eprintln "careful")'

    completion_samples = [
        {"text": "(linsp", "matches": {"linspace"}},
        {"text": "(plot xs ys :log-", "matches": {":log-x", ":log-y"}},
    ]

    complete_code_samples = ["(+ 1 2)", "(define (f x)\n  (* x x))", ":doc map", "?map"]
    incomplete_code_samples = ["(+ 1", "(define (f x)", '"an open string', ":time (+ 1"]
    invalid_code_samples = ["(+ 1 2))", ")", "(+ 1 2]"]

    code_page_something = "?map"

    code_generate_error = "(car 1)"

    code_execute_result = [
        {"code": "(+ 1 2)", "result": "3"},
        {"code": "(* 6 7)", "result": "42"},
        {"code": "(list 1 2)", "result": "(1 2)"},
        {"code": "(diff '(* x x) 'x)", "mime": "text/latex"},
    ]
    # Matches "(+ 1 2)" alone.
    code_history_pattern = "(+ 1*"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "linspace"

    code_display_data = [
        {"code": "(plot (linspace 0 1 5) (linspace 0 1 5))", "mime": "image/png"},
        {"code": "(plot (linspace 0 1 5) (linspace 0 1 5))", "mime": "image/svg+xml"},
    ]


class EpsilonIopubWelcomeTests(jupyter_kernel_test.IopubWelcomeTests):
    kernel_name = "epsilon"
    support_iopub_welcome = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The suite waits for the welcome without a timeout: a kernel that
        # sends none fails the test instead of hanging it.
        get = cls.kc.get_iopub_msg
        cls.kc.get_iopub_msg = lambda *args, **kwargs: get(*args, **{"timeout": TIMEOUT, **kwargs})


if __name__ == "__main__":
    unittest.main(verbosity=2)
