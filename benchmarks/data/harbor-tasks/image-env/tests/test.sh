#!/bin/bash
if [ "$(cat /app/java_home.txt 2>/dev/null)" = "/opt/jdk-21" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
