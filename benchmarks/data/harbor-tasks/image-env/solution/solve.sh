#!/bin/bash
printf '%s' "$JAVA_HOME" > /app/java_home.txt
