from convo import UserTemplate

template = UserTemplate()
