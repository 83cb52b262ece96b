import os

print("FOO=" + str(os.environ.get("FOO")))
