#!/bin/bash
printf '#!/bin/sh\necho hello from the container\n' > /usr/local/bin/greet
chmod +x /usr/local/bin/greet
