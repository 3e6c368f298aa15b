"""The suite's runner in GPU MODE's layout (``task.yml`` names it ``../eval.py`` as the main
file). kernelproof does not run it: it imports ``reference.py`` and the submission itself."""

if __name__ == "__main__":
    raise SystemExit("run the problems of this suite with kernelproof, e.g. "
                     "kernelproof verify vectoradd_py vectoradd_py/submission.py")
