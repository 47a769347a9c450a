#!/bin/bash
mkdir -p /srv/www && printf ok > /srv/www/health
nohup python3 -m http.server 18765 --bind 127.0.0.1 --directory /srv/www > /dev/null 2>&1 &
sleep 1
