# expect: ZeroDivisionError: the user's bug
run("rmcat-5.1", cc="pycc_examples:Raises")
