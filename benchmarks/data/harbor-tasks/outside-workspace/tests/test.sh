#!/bin/bash
if [ "$(greet 2>/dev/null)" = "hello from the container" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
