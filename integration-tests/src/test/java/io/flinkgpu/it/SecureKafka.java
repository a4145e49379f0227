package io.flinkgpu.it;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;

/**
 * A single-node Kafka (KRaft, combined broker and controller, in this JVM) that authenticates every
 * connection with SASL/PLAIN and authorizes every request with the StandardAuthorizer and ACLs
 * ({@code allow.everyone.if.no.acl.found=false}): a user may do only what an ACL allows.
 *
 * <p>Users are fixed when it starts, each with a random password. Both listeners (clients' and
 * the controller's) use SASL_PLAINTEXT; the broker authenticates to itself as {@link #BROKER}, the
 * only super user, which is also the principal of the fixture's own {@link #admin()} (topics and
 * ACLs). Clients connect with {@link #clientProperties(String)}.
 */
final class SecureKafka implements AutoCloseable {
    /** The broker's and controller's principal, the only super user. */
    static final String BROKER = "broker";
    private static final String PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule";

    private final KafkaClusterTestKit cluster;
    private final Map<String, String> passwords;

    private SecureKafka(KafkaClusterTestKit cluster, Map<String, String> passwords) {
        this.cluster = cluster;
        this.passwords = passwords;
    }

    /** Starts the broker with {@code users} (and {@link #BROKER}), each with a password of its own. */
    static SecureKafka start(String... users) throws Exception {
        Map<String, String> passwords = new LinkedHashMap<>();
        passwords.put(BROKER, randomPassword());
        for (String user : users) {
            if (!user.matches("[A-Za-z0-9_-]+") || passwords.put(user, randomPassword()) != null) {
                throw new IllegalArgumentException("user names are [A-Za-z0-9_-]+ and distinct: " + user);
            }
        }
        StringBuilder clientListener = new StringBuilder(serverJaas(passwords.get(BROKER)));
        passwords.forEach((user, pw) -> clientListener.append(" user_").append(user).append("=\"").append(pw)
                .append('"'));
        String controllerListener = serverJaas(passwords.get(BROKER)) + " user_" + BROKER + "=\""
                + passwords.get(BROKER) + '"';
        TestKitNodes nodes = new TestKitNodes.Builder()
                .setCombined(true)
                .setNumBrokerNodes(1)
                .setNumControllerNodes(1)
                .setBrokerSecurityProtocol(SecurityProtocol.SASL_PLAINTEXT)
                .setControllerSecurityProtocol(SecurityProtocol.SASL_PLAINTEXT)
                .build();
        String client = nodes.brokerListenerName().value().toLowerCase(java.util.Locale.ROOT);
        String controller = nodes.controllerListenerName().value().toLowerCase(java.util.Locale.ROOT);
        Map<String, String> security = new LinkedHashMap<>();
        // the listeners' own JAAS entries, in place of the test kit's static JAAS file and its users
        security.put("listener.name." + client + ".plain.sasl.jaas.config", clientListener + ";");
        security.put("listener.name." + controller + ".plain.sasl.jaas.config", controllerListener + ";");
        security.put("sasl.enabled.mechanisms", "PLAIN");
        security.put("sasl.mechanism.inter.broker.protocol", "PLAIN");
        security.put("sasl.mechanism.controller.protocol", "PLAIN");
        security.put("authorizer.class.name", StandardAuthorizer.class.getName());
        security.put("allow.everyone.if.no.acl.found", "false");
        security.put("super.users", "User:" + BROKER);
        KafkaClusterTestKit cluster = io.flinkgpu.job.local.EmbeddedKafka.startCluster(nodes, security);
        return new SecureKafka(cluster, passwords);
    }

    private static String serverJaas(String brokerPassword) {
        return PLAIN_LOGIN_MODULE + " required username=\"" + BROKER + "\" password=\"" + brokerPassword + '"';
    }

    private static String randomPassword() {
        byte[] b = new byte[18];
        new SecureRandom().nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    String bootstrapServers() {
        return cluster.bootstrapServers();
    }

    String password(String user) {
        String pw = passwords.get(user);
        if (pw == null) {
            throw new IllegalArgumentException("no user " + user);
        }
        return pw;
    }

    /** The JAAS entry of a PLAIN client logging in as {@code user} with {@code password}. */
    static String jaasConfig(String user, String password) {
        return PLAIN_LOGIN_MODULE + " required username=\"" + user + "\" password=\"" + password + "\";";
    }

    /** SASL_PLAINTEXT / PLAIN client settings of {@code user} (no bootstrap servers). */
    Map<String, String> credentials(String user) {
        return credentials(user, password(user));
    }

    /** As {@link #credentials(String)} with any password, e.g. a wrong one. */
    static Map<String, String> credentials(String user, String password) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("security.protocol", SecurityProtocol.SASL_PLAINTEXT.name);
        c.put("sasl.mechanism", "PLAIN");
        c.put("sasl.jaas.config", jaasConfig(user, password));
        return c;
    }

    /** Bootstrap servers and {@code user}'s credentials, for a Kafka client. */
    Properties clientProperties(String user) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrapServers());
        p.putAll(credentials(user));
        return p;
    }

    /** An admin client of the super user; close it. */
    Admin admin() {
        return Admin.create(clientProperties(BROKER));
    }

    void createTopics(int partitions, String... topics) throws Exception {
        try (Admin admin = admin()) {
            List<NewTopic> newTopics = new ArrayList<>();
            for (String t : topics) {
                newTopics.add(new NewTopic(t, partitions, (short) 1));
            }
            admin.createTopics(newTopics).all().get(30, TimeUnit.SECONDS);
        }
    }

    /** An ACL that allows {@code user} {@code operations} on the resources the pattern names, from any host. */
    static List<AclBinding> allow(String user, ResourceType type, String name, PatternType pattern,
            AclOperation... operations) {
        List<AclBinding> out = new ArrayList<>();
        for (AclOperation op : operations) {
            out.add(new AclBinding(new ResourcePattern(type, name, pattern),
                    new AccessControlEntry("User:" + user, "*", op, AclPermissionType.ALLOW)));
        }
        return out;
    }

    /** {@code user} may do {@code operations} on topic {@code topic}. */
    static List<AclBinding> allowTopic(String user, String topic, AclOperation... operations) {
        return allow(user, ResourceType.TOPIC, topic, PatternType.LITERAL, operations);
    }

    /** {@code user} may join, commit and describe the consumer groups whose ids start with {@code prefix}. */
    static List<AclBinding> allowGroups(String user, String prefix) {
        return allow(user, ResourceType.GROUP, prefix, PatternType.PREFIXED, AclOperation.READ);
    }

    /**
     * Creates the ACLs and waits until the broker's authorizer has them (ACLs are metadata: the
     * controller commits them, the broker applies them shortly after).
     */
    void grant(Collection<AclBinding> acls) throws Exception {
        try (Admin admin = admin()) {
            admin.createAcls(acls).all().get(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                Collection<AclBinding> present = admin.describeAcls(AclBindingFilter.ANY).values()
                        .get(30, TimeUnit.SECONDS);
                if (present.containsAll(acls)) {
                    return;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the broker never showed the ACLs " + acls);
                }
                Thread.sleep(50);
            }
        }
    }

    /** The ACLs of {@code user}, as the broker's authorizer has them. */
    Collection<AclBinding> acls(String user) throws Exception {
        try (Admin admin = admin()) {
            return admin.describeAcls(new AclBindingFilter(ResourcePatternFilter.ANY,
                    new AccessControlEntryFilter("User:" + user, null, AclOperation.ANY,
                            AclPermissionType.ANY))).values().get(30, TimeUnit.SECONDS);
        }
    }

    @Override
    public void close() throws Exception {
        cluster.close();
        // the test kit points the JVM's JAAS configuration at a file of its own; later brokers of
        // this JVM are plaintext and need none
        if (System.getProperty("java.security.auth.login.config") != null) {
            System.clearProperty("java.security.auth.login.config");
            javax.security.auth.login.Configuration.setConfiguration(null);
        }
    }
}
