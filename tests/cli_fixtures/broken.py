from convo import UserTemplate

template = UserTemplate()
raise ZeroDivisionError("the file is broken on purpose")
