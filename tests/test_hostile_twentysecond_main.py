"""The twenty-second hostile pass, the lead's cases: a signal Python drops where its handler cannot raise."""

import subprocess
import sys
import textwrap

import pytest

DROPPED = textwrap.dedent("""
    import asyncio, os, signal, weakref
    from benchrun.core.interrupts import INTERRUPTS
    INTERRUPTS.install()

    class Held:
        pass

    def collected(_):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs here, inside the callback, which cannot raise
            pass

    held = Held()
    kept = weakref.ref(held, collected)
    del held

    async def ask():
        await asyncio.sleep(5)
        return "asked on"

    try:
        print(INTERRUPTS.run(ask))
    except KeyboardInterrupt as err:
        print("interrupted by", err)
""")


@pytest.mark.slow
def test_a_signal_raised_in_a_weakref_callback_interrupts_the_asking():
    """A sweep's submitit_local job sent SIGINT while the garbage collector ran a weakref callback lost it (Python
    printed "Exception ignored ... KeyboardInterrupt: SIGINT"): it asked on until its launcher killed it, `running`."""
    done = subprocess.run([sys.executable, "-c", DROPPED], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "interrupted by SIGTERM\n", "")


@pytest.mark.slow
def test_another_exception_python_drops_is_still_reported():
    script = textwrap.dedent("""
        import weakref
        from benchrun.core.interrupts import INTERRUPTS
        INTERRUPTS.install()

        class Held:
            pass

        def collected(_):
            raise ValueError("from a callback")

        held = Held()
        kept = weakref.ref(held, collected)
        del held
        print("went on")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "went on\n")
    assert done.stderr.startswith("Exception ignored in: <function collected at ")
    assert done.stderr.endswith("ValueError: from a callback\n")
