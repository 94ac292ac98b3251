#!/bin/sh
# bin/kafka-broker-api-versions.sh of the compose test's stand-in for apache/kafka
# (e2e/kafka_image_helpers_test.go): the class the real script runs through
# kafka-run-class.sh, in a small client JVM. docker-compose.yml's health check of the
# kafka service runs it as it is.
exec java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true \
	-Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties -cp '/opt/kafka/libs/*' \
	org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
