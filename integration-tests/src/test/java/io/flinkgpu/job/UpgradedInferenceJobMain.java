package io.flinkgpu.job;

import io.flinkgpu.inference.operator.GpuInference;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.inference.operator.InferenceTypes;
import io.flinkgpu.inference.operator.ModelPartitioner;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.WireCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.ParameterTool;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Test-only "version 2" of the inference job, for the savepoint-upgrade test: the same pipeline as
 * {@link InferenceJob#build} with the same operator uids, plus one extra operator between the
 * inference operator and the response sink ("Response audit", uid {@value #UID_AUDIT}: counts
 * responses per outcome, passes them on unchanged). Batching settings differ through program
 * arguments. {@code MultiProcessClusterTest} adds this class to a copy of the shaded job jar and
 * submits it with the savepoint of version 1. (It sits in io.flinkgpu.job to reuse the job's
 * package-private pieces.)
 */
public final class UpgradedInferenceJobMain {
    public static final String UID_AUDIT = "response-audit";

    private UpgradedInferenceJobMain() {}

    public static void main(String[] args) throws Exception {
        Configuration arguments = ParameterTool.fromArgs(args).getConfiguration();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(arguments);
        Configuration config = Configuration.fromMap(env.getConfiguration().toMap());
        config.addAll(arguments);

        InferenceSettings settings = InferenceSettings.fromConfiguration(config);
        env.getConfig().enableObjectReuse();
        env.setBufferTimeout(config.get(InferenceJobOptions.BUFFER_TIMEOUT).toMillis());
        Duration interval = config.get(InferenceJobOptions.CHECKPOINT_INTERVAL);
        if (!interval.isZero() && !env.getCheckpointConfig().isCheckpointingEnabled()) {
            env.enableCheckpointing(interval.toMillis());
        }
        String bootstrap = config.get(InferenceJobOptions.BOOTSTRAP_SERVERS);

        KafkaSource<KafkaRecord> source = KafkaSource.<KafkaRecord>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(config.get(InferenceJobOptions.REQUESTS_TOPIC))
                .setGroupId(config.get(InferenceJobOptions.GROUP_ID))
                .setStartingOffsets(OffsetsInitializer.earliest()) // only used without a savepoint
                .setDeserializer(new InferenceJob.RawRecordDeserializer(false))
                .build();
        DataStream<KafkaRecord> records = env.fromSource(source, WatermarkStrategy.noWatermarks(), "Kafka requests")
                .uid(InferenceJob.UID_SOURCE);
        SingleOutputStreamOperator<InferenceRequest> requests = records
                .process(new RequestParser(config.get(InferenceJobOptions.REQUESTS_FORMAT), settings.limits()),
                        InferenceTypes.REQUEST)
                .uid(InferenceJob.UID_PARSER)
                .name("Parse");
        SingleOutputStreamOperator<InferenceResponse> responses = GpuInference.builder()
                .configuration(config)
                .build()
                .apply(requests.partitionCustom(new ModelPartitioner(), InferenceRequest::modelName))
                .setParallelism(config.get(InferenceJobOptions.PARALLELISM));

        // the extra operator of version 2
        SingleOutputStreamOperator<InferenceResponse> audited = responses
                .process(new ResponseAudit(), InferenceTypes.RESPONSE)
                .uid(UID_AUDIT)
                .name("Response audit");

        int maxRecordBytes = (int) Math.min(Integer.MAX_VALUE, config.get(InferenceJobOptions.MAX_RECORD_SIZE).getBytes());
        WireCodec codec = config.get(InferenceJobOptions.RESPONSES_FORMAT).writer();
        String responsesTopic = config.get(InferenceJobOptions.RESPONSES_TOPIC);
        Map<String, String> kafkaProperties = InferenceJob.kafkaClientProperties(config);
        audited.sinkTo(InferenceJob.responseSink(bootstrap, kafkaProperties, false, maxRecordBytes, codec,
                        responsesTopic, "gpu-inference-responses"))
                .setParallelism(audited.getParallelism())
                .uid(InferenceJob.UID_RESPONSE_SINK)
                .name("Kafka responses");
        requests.getSideOutput(RequestParser.ERROR_RESPONSES)
                .sinkTo(InferenceJob.responseSink(bootstrap, kafkaProperties, false, maxRecordBytes, codec,
                        responsesTopic, "gpu-inference-error-responses"))
                .setParallelism(requests.getParallelism())
                .uid(InferenceJob.UID_ERROR_RESPONSE_SINK)
                .name("Kafka error responses");

        Properties producer = new Properties();
        producer.setProperty("max.request.size", String.valueOf(maxRecordBytes));
        producer.setProperty("linger.ms", "2");
        String deadLetterTopic = config.get(InferenceJobOptions.DEAD_LETTER_TOPIC);
        requests.getSideOutput(RequestParser.DEAD_LETTERS)
                .union(responses.getSideOutput(GpuInference.REFUSED).map(DeadLetter::of,
                        org.apache.flink.api.common.typeinfo.TypeInformation.of(DeadLetter.class)))
                .sinkTo(KafkaSink.<DeadLetter>builder()
                        .setBootstrapServers(bootstrap)
                        .setKafkaProducerConfig(producer)
                        .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                        .setRecordSerializer((KafkaRecordSerializationSchema<DeadLetter>) (d, ctx, ts) ->
                                new ProducerRecord<>(deadLetterTopic,
                                        d.requestId() == null ? null : d.requestId().getBytes(StandardCharsets.UTF_8),
                                        d.toJson(maxRecordBytes / 2)))
                        .build())
                .uid(InferenceJob.UID_DEAD_LETTER_SINK)
                .name("Kafka dead letters");

        env.execute("flink-gpu-inference v2 (upgraded)");
    }

    /** Counts responses (metric group response_audit: successes, errors) and passes them on. */
    static final class ResponseAudit extends ProcessFunction<InferenceResponse, InferenceResponse> {
        private static final long serialVersionUID = 1L;
        private transient Counter successes;
        private transient Counter errors;

        @Override
        public void open(OpenContext openContext) {
            successes = getRuntimeContext().getMetricGroup().addGroup("response_audit").counter("successes");
            errors = getRuntimeContext().getMetricGroup().addGroup("response_audit").counter("errors");
        }

        @Override
        public void processElement(InferenceResponse response, Context ctx, Collector<InferenceResponse> out) {
            (response.isError() ? errors : successes).inc();
            out.collect(response);
        }
    }
}
