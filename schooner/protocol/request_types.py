"""The request types of each API this broker serves: a union of kio's versioned classes.

One alias per API, named like kio's class (`ProduceRequest` is every Produce version served), so a
handler's attribute access is checked by mypy against every version it may receive: a field that
some version lacks must be read with getattr() or after narrowing. Produce v0-v2 come from
legacy_produce/, which kio lacks. Generated from SUPPORTED_VERSIONS;
tests/protocol/test_request_types.py fails when the two disagree.
"""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.add_offsets_to_txn.v0.request import AddOffsetsToTxnRequest as AddOffsetsToTxnV0
from kio.schema.add_offsets_to_txn.v1.request import AddOffsetsToTxnRequest as AddOffsetsToTxnV1
from kio.schema.add_offsets_to_txn.v2.request import AddOffsetsToTxnRequest as AddOffsetsToTxnV2
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest as AddOffsetsToTxnV3
from kio.schema.add_offsets_to_txn.v4.request import AddOffsetsToTxnRequest as AddOffsetsToTxnV4
from kio.schema.add_partitions_to_txn.v0.request import AddPartitionsToTxnRequest as AddPartitionsToTxnV0
from kio.schema.add_partitions_to_txn.v1.request import AddPartitionsToTxnRequest as AddPartitionsToTxnV1
from kio.schema.add_partitions_to_txn.v2.request import AddPartitionsToTxnRequest as AddPartitionsToTxnV2
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest as AddPartitionsToTxnV3
from kio.schema.add_partitions_to_txn.v4.request import AddPartitionsToTxnRequest as AddPartitionsToTxnV4
from kio.schema.add_partitions_to_txn.v5.request import AddPartitionsToTxnRequest as AddPartitionsToTxnV5
from kio.schema.alter_client_quotas.v0.request import AlterClientQuotasRequest as AlterClientQuotasV0
from kio.schema.alter_client_quotas.v1.request import AlterClientQuotasRequest as AlterClientQuotasV1
from kio.schema.alter_configs.v0.request import AlterConfigsRequest as AlterConfigsV0
from kio.schema.alter_configs.v1.request import AlterConfigsRequest as AlterConfigsV1
from kio.schema.alter_configs.v2.request import AlterConfigsRequest as AlterConfigsV2
from kio.schema.alter_partition_reassignments.v0.request import (
    AlterPartitionReassignmentsRequest as AlterPartitionReassignmentsV0,
)
from kio.schema.alter_partition_reassignments.v1.request import (
    AlterPartitionReassignmentsRequest as AlterPartitionReassignmentsV1,
)
from kio.schema.alter_replica_log_dirs.v1.request import AlterReplicaLogDirsRequest as AlterReplicaLogDirsV1
from kio.schema.alter_replica_log_dirs.v2.request import AlterReplicaLogDirsRequest as AlterReplicaLogDirsV2
from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequest as AlterShareGroupOffsetsV0,
)
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest as AlterUserScramCredentialsV0,
)
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.api_versions.v1.request import ApiVersionsRequest as ApiVersionsV1
from kio.schema.api_versions.v2.request import ApiVersionsRequest as ApiVersionsV2
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsV3
from kio.schema.api_versions.v4.request import ApiVersionsRequest as ApiVersionsV4
from kio.schema.consumer_group_describe.v0.request import (
    ConsumerGroupDescribeRequest as ConsumerGroupDescribeV0,
)
from kio.schema.consumer_group_describe.v1.request import (
    ConsumerGroupDescribeRequest as ConsumerGroupDescribeV1,
)
from kio.schema.consumer_group_heartbeat.v0.request import (
    ConsumerGroupHeartbeatRequest as ConsumerGroupHeartbeatV0,
)
from kio.schema.consumer_group_heartbeat.v1.request import (
    ConsumerGroupHeartbeatRequest as ConsumerGroupHeartbeatV1,
)
from kio.schema.create_acls.v1.request import CreateAclsRequest as CreateAclsV1
from kio.schema.create_acls.v2.request import CreateAclsRequest as CreateAclsV2
from kio.schema.create_acls.v3.request import CreateAclsRequest as CreateAclsV3
from kio.schema.create_partitions.v0.request import CreatePartitionsRequest as CreatePartitionsV0
from kio.schema.create_partitions.v1.request import CreatePartitionsRequest as CreatePartitionsV1
from kio.schema.create_partitions.v2.request import CreatePartitionsRequest as CreatePartitionsV2
from kio.schema.create_partitions.v3.request import CreatePartitionsRequest as CreatePartitionsV3
from kio.schema.create_topics.v2.request import CreateTopicsRequest as CreateTopicsV2
from kio.schema.create_topics.v3.request import CreateTopicsRequest as CreateTopicsV3
from kio.schema.create_topics.v4.request import CreateTopicsRequest as CreateTopicsV4
from kio.schema.create_topics.v5.request import CreateTopicsRequest as CreateTopicsV5
from kio.schema.create_topics.v6.request import CreateTopicsRequest as CreateTopicsV6
from kio.schema.create_topics.v7.request import CreateTopicsRequest as CreateTopicsV7
from kio.schema.delete_acls.v1.request import DeleteAclsRequest as DeleteAclsV1
from kio.schema.delete_acls.v2.request import DeleteAclsRequest as DeleteAclsV2
from kio.schema.delete_acls.v3.request import DeleteAclsRequest as DeleteAclsV3
from kio.schema.delete_groups.v0.request import DeleteGroupsRequest as DeleteGroupsV0
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest as DeleteGroupsV1
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest as DeleteGroupsV2
from kio.schema.delete_records.v0.request import DeleteRecordsRequest as DeleteRecordsV0
from kio.schema.delete_records.v1.request import DeleteRecordsRequest as DeleteRecordsV1
from kio.schema.delete_records.v2.request import DeleteRecordsRequest as DeleteRecordsV2
from kio.schema.delete_share_group_offsets.v0.request import (
    DeleteShareGroupOffsetsRequest as DeleteShareGroupOffsetsV0,
)
from kio.schema.delete_topics.v1.request import DeleteTopicsRequest as DeleteTopicsV1
from kio.schema.delete_topics.v2.request import DeleteTopicsRequest as DeleteTopicsV2
from kio.schema.delete_topics.v3.request import DeleteTopicsRequest as DeleteTopicsV3
from kio.schema.delete_topics.v4.request import DeleteTopicsRequest as DeleteTopicsV4
from kio.schema.delete_topics.v5.request import DeleteTopicsRequest as DeleteTopicsV5
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as DeleteTopicsV6
from kio.schema.describe_acls.v1.request import DescribeAclsRequest as DescribeAclsV1
from kio.schema.describe_acls.v2.request import DescribeAclsRequest as DescribeAclsV2
from kio.schema.describe_acls.v3.request import DescribeAclsRequest as DescribeAclsV3
from kio.schema.describe_client_quotas.v0.request import DescribeClientQuotasRequest as DescribeClientQuotasV0
from kio.schema.describe_client_quotas.v1.request import DescribeClientQuotasRequest as DescribeClientQuotasV1
from kio.schema.describe_cluster.v0.request import DescribeClusterRequest as DescribeClusterV0
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as DescribeClusterV1
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest as DescribeClusterV2
from kio.schema.describe_configs.v1.request import DescribeConfigsRequest as DescribeConfigsV1
from kio.schema.describe_configs.v2.request import DescribeConfigsRequest as DescribeConfigsV2
from kio.schema.describe_configs.v3.request import DescribeConfigsRequest as DescribeConfigsV3
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest as DescribeConfigsV4
from kio.schema.describe_groups.v0.request import DescribeGroupsRequest as DescribeGroupsV0
from kio.schema.describe_groups.v1.request import DescribeGroupsRequest as DescribeGroupsV1
from kio.schema.describe_groups.v2.request import DescribeGroupsRequest as DescribeGroupsV2
from kio.schema.describe_groups.v3.request import DescribeGroupsRequest as DescribeGroupsV3
from kio.schema.describe_groups.v4.request import DescribeGroupsRequest as DescribeGroupsV4
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest as DescribeGroupsV5
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest as DescribeGroupsV6
from kio.schema.describe_log_dirs.v1.request import DescribeLogDirsRequest as DescribeLogDirsV1
from kio.schema.describe_log_dirs.v2.request import DescribeLogDirsRequest as DescribeLogDirsV2
from kio.schema.describe_log_dirs.v3.request import DescribeLogDirsRequest as DescribeLogDirsV3
from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest as DescribeLogDirsV4
from kio.schema.describe_log_dirs.v5.request import DescribeLogDirsRequest as DescribeLogDirsV5
from kio.schema.describe_producers.v0.request import DescribeProducersRequest as DescribeProducersV0
from kio.schema.describe_share_group_offsets.v0.request import (
    DescribeShareGroupOffsetsRequest as DescribeShareGroupOffsetsV0,
)
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest as DescribeShareGroupOffsetsV1,
)
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest as DescribeTransactionsV0
from kio.schema.describe_user_scram_credentials.v0.request import (
    DescribeUserScramCredentialsRequest as DescribeUserScramCredentialsV0,
)
from kio.schema.elect_leaders.v0.request import ElectLeadersRequest as ElectLeadersV0
from kio.schema.elect_leaders.v1.request import ElectLeadersRequest as ElectLeadersV1
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest as ElectLeadersV2
from kio.schema.end_txn.v0.request import EndTxnRequest as EndTxnV0
from kio.schema.end_txn.v1.request import EndTxnRequest as EndTxnV1
from kio.schema.end_txn.v2.request import EndTxnRequest as EndTxnV2
from kio.schema.end_txn.v3.request import EndTxnRequest as EndTxnV3
from kio.schema.end_txn.v4.request import EndTxnRequest as EndTxnV4
from kio.schema.end_txn.v5.request import EndTxnRequest as EndTxnV5
from kio.schema.fetch.v4.request import FetchRequest as FetchV4
from kio.schema.fetch.v5.request import FetchRequest as FetchV5
from kio.schema.fetch.v6.request import FetchRequest as FetchV6
from kio.schema.fetch.v7.request import FetchRequest as FetchV7
from kio.schema.fetch.v8.request import FetchRequest as FetchV8
from kio.schema.fetch.v9.request import FetchRequest as FetchV9
from kio.schema.fetch.v10.request import FetchRequest as FetchV10
from kio.schema.fetch.v11.request import FetchRequest as FetchV11
from kio.schema.fetch.v12.request import FetchRequest as FetchV12
from kio.schema.fetch.v13.request import FetchRequest as FetchV13
from kio.schema.fetch.v14.request import FetchRequest as FetchV14
from kio.schema.fetch.v15.request import FetchRequest as FetchV15
from kio.schema.fetch.v16.request import FetchRequest as FetchV16
from kio.schema.fetch.v17.request import FetchRequest as FetchV17
from kio.schema.fetch.v18.request import FetchRequest as FetchV18
from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest as FindCoordinatorV0
from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest as FindCoordinatorV1
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest as FindCoordinatorV2
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest as FindCoordinatorV3
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorV4
from kio.schema.find_coordinator.v5.request import FindCoordinatorRequest as FindCoordinatorV5
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest as FindCoordinatorV6
from kio.schema.heartbeat.v0.request import HeartbeatRequest as HeartbeatV0
from kio.schema.heartbeat.v1.request import HeartbeatRequest as HeartbeatV1
from kio.schema.heartbeat.v2.request import HeartbeatRequest as HeartbeatV2
from kio.schema.heartbeat.v3.request import HeartbeatRequest as HeartbeatV3
from kio.schema.heartbeat.v4.request import HeartbeatRequest as HeartbeatV4
from kio.schema.incremental_alter_configs.v0.request import (
    IncrementalAlterConfigsRequest as IncrementalAlterConfigsV0,
)
from kio.schema.incremental_alter_configs.v1.request import (
    IncrementalAlterConfigsRequest as IncrementalAlterConfigsV1,
)
from kio.schema.init_producer_id.v0.request import InitProducerIdRequest as InitProducerIdV0
from kio.schema.init_producer_id.v1.request import InitProducerIdRequest as InitProducerIdV1
from kio.schema.init_producer_id.v2.request import InitProducerIdRequest as InitProducerIdV2
from kio.schema.init_producer_id.v3.request import InitProducerIdRequest as InitProducerIdV3
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest as InitProducerIdV4
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest as InitProducerIdV5
from kio.schema.init_producer_id.v6.request import InitProducerIdRequest as InitProducerIdV6
from kio.schema.join_group.v0.request import JoinGroupRequest as JoinGroupV0
from kio.schema.join_group.v1.request import JoinGroupRequest as JoinGroupV1
from kio.schema.join_group.v2.request import JoinGroupRequest as JoinGroupV2
from kio.schema.join_group.v3.request import JoinGroupRequest as JoinGroupV3
from kio.schema.join_group.v4.request import JoinGroupRequest as JoinGroupV4
from kio.schema.join_group.v5.request import JoinGroupRequest as JoinGroupV5
from kio.schema.join_group.v6.request import JoinGroupRequest as JoinGroupV6
from kio.schema.join_group.v7.request import JoinGroupRequest as JoinGroupV7
from kio.schema.join_group.v8.request import JoinGroupRequest as JoinGroupV8
from kio.schema.join_group.v9.request import JoinGroupRequest as JoinGroupV9
from kio.schema.leave_group.v0.request import LeaveGroupRequest as LeaveGroupV0
from kio.schema.leave_group.v1.request import LeaveGroupRequest as LeaveGroupV1
from kio.schema.leave_group.v2.request import LeaveGroupRequest as LeaveGroupV2
from kio.schema.leave_group.v3.request import LeaveGroupRequest as LeaveGroupV3
from kio.schema.leave_group.v4.request import LeaveGroupRequest as LeaveGroupV4
from kio.schema.leave_group.v5.request import LeaveGroupRequest as LeaveGroupV5
from kio.schema.list_groups.v0.request import ListGroupsRequest as ListGroupsV0
from kio.schema.list_groups.v1.request import ListGroupsRequest as ListGroupsV1
from kio.schema.list_groups.v2.request import ListGroupsRequest as ListGroupsV2
from kio.schema.list_groups.v3.request import ListGroupsRequest as ListGroupsV3
from kio.schema.list_groups.v4.request import ListGroupsRequest as ListGroupsV4
from kio.schema.list_groups.v5.request import ListGroupsRequest as ListGroupsV5
from kio.schema.list_offsets.v1.request import ListOffsetsRequest as ListOffsetsV1
from kio.schema.list_offsets.v2.request import ListOffsetsRequest as ListOffsetsV2
from kio.schema.list_offsets.v3.request import ListOffsetsRequest as ListOffsetsV3
from kio.schema.list_offsets.v4.request import ListOffsetsRequest as ListOffsetsV4
from kio.schema.list_offsets.v5.request import ListOffsetsRequest as ListOffsetsV5
from kio.schema.list_offsets.v6.request import ListOffsetsRequest as ListOffsetsV6
from kio.schema.list_offsets.v7.request import ListOffsetsRequest as ListOffsetsV7
from kio.schema.list_offsets.v8.request import ListOffsetsRequest as ListOffsetsV8
from kio.schema.list_offsets.v9.request import ListOffsetsRequest as ListOffsetsV9
from kio.schema.list_offsets.v10.request import ListOffsetsRequest as ListOffsetsV10
from kio.schema.list_offsets.v11.request import ListOffsetsRequest as ListOffsetsV11
from kio.schema.list_partition_reassignments.v0.request import (
    ListPartitionReassignmentsRequest as ListPartitionReassignmentsV0,
)
from kio.schema.list_transactions.v0.request import ListTransactionsRequest as ListTransactionsV0
from kio.schema.list_transactions.v1.request import ListTransactionsRequest as ListTransactionsV1
from kio.schema.list_transactions.v2.request import ListTransactionsRequest as ListTransactionsV2
from kio.schema.metadata.v0.request import MetadataRequest as MetadataV0
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.schema.metadata.v2.request import MetadataRequest as MetadataV2
from kio.schema.metadata.v3.request import MetadataRequest as MetadataV3
from kio.schema.metadata.v4.request import MetadataRequest as MetadataV4
from kio.schema.metadata.v5.request import MetadataRequest as MetadataV5
from kio.schema.metadata.v6.request import MetadataRequest as MetadataV6
from kio.schema.metadata.v7.request import MetadataRequest as MetadataV7
from kio.schema.metadata.v8.request import MetadataRequest as MetadataV8
from kio.schema.metadata.v9.request import MetadataRequest as MetadataV9
from kio.schema.metadata.v10.request import MetadataRequest as MetadataV10
from kio.schema.metadata.v11.request import MetadataRequest as MetadataV11
from kio.schema.metadata.v12.request import MetadataRequest as MetadataV12
from kio.schema.metadata.v13.request import MetadataRequest as MetadataV13
from kio.schema.offset_commit.v2.request import OffsetCommitRequest as OffsetCommitV2
from kio.schema.offset_commit.v3.request import OffsetCommitRequest as OffsetCommitV3
from kio.schema.offset_commit.v4.request import OffsetCommitRequest as OffsetCommitV4
from kio.schema.offset_commit.v5.request import OffsetCommitRequest as OffsetCommitV5
from kio.schema.offset_commit.v6.request import OffsetCommitRequest as OffsetCommitV6
from kio.schema.offset_commit.v7.request import OffsetCommitRequest as OffsetCommitV7
from kio.schema.offset_commit.v8.request import OffsetCommitRequest as OffsetCommitV8
from kio.schema.offset_commit.v9.request import OffsetCommitRequest as OffsetCommitV9
from kio.schema.offset_commit.v10.request import OffsetCommitRequest as OffsetCommitV10
from kio.schema.offset_delete.v0.request import OffsetDeleteRequest as OffsetDeleteV0
from kio.schema.offset_fetch.v1.request import OffsetFetchRequest as OffsetFetchV1
from kio.schema.offset_fetch.v2.request import OffsetFetchRequest as OffsetFetchV2
from kio.schema.offset_fetch.v3.request import OffsetFetchRequest as OffsetFetchV3
from kio.schema.offset_fetch.v4.request import OffsetFetchRequest as OffsetFetchV4
from kio.schema.offset_fetch.v5.request import OffsetFetchRequest as OffsetFetchV5
from kio.schema.offset_fetch.v6.request import OffsetFetchRequest as OffsetFetchV6
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest as OffsetFetchV7
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest as OffsetFetchV8
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest as OffsetFetchV9
from kio.schema.offset_fetch.v10.request import OffsetFetchRequest as OffsetFetchV10
from kio.schema.offset_for_leader_epoch.v2.request import (
    OffsetForLeaderEpochRequest as OffsetForLeaderEpochV2,
)
from kio.schema.offset_for_leader_epoch.v3.request import (
    OffsetForLeaderEpochRequest as OffsetForLeaderEpochV3,
)
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest as OffsetForLeaderEpochV4,
)
from kio.schema.produce.v3.request import ProduceRequest as ProduceV3
from kio.schema.produce.v4.request import ProduceRequest as ProduceV4
from kio.schema.produce.v5.request import ProduceRequest as ProduceV5
from kio.schema.produce.v6.request import ProduceRequest as ProduceV6
from kio.schema.produce.v7.request import ProduceRequest as ProduceV7
from kio.schema.produce.v8.request import ProduceRequest as ProduceV8
from kio.schema.produce.v9.request import ProduceRequest as ProduceV9
from kio.schema.produce.v10.request import ProduceRequest as ProduceV10
from kio.schema.produce.v11.request import ProduceRequest as ProduceV11
from kio.schema.produce.v12.request import ProduceRequest as ProduceV12
from kio.schema.produce.v13.request import ProduceRequest as ProduceV13
from kio.schema.sasl_authenticate.v0.request import SaslAuthenticateRequest as SaslAuthenticateV0
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest as SaslAuthenticateV1
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest as SaslAuthenticateV2
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest as SaslHandshakeV1
from kio.schema.share_acknowledge.v1.request import ShareAcknowledgeRequest as ShareAcknowledgeV1
from kio.schema.share_acknowledge.v2.request import ShareAcknowledgeRequest as ShareAcknowledgeV2
from kio.schema.share_fetch.v1.request import ShareFetchRequest as ShareFetchV1
from kio.schema.share_fetch.v2.request import ShareFetchRequest as ShareFetchV2
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest as ShareGroupDescribeV1
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest as ShareGroupHeartbeatV1
from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest as StreamsGroupDescribeV0
from kio.schema.streams_group_heartbeat.v0.request import (
    StreamsGroupHeartbeatRequest as StreamsGroupHeartbeatV0,
)
from kio.schema.sync_group.v0.request import SyncGroupRequest as SyncGroupV0
from kio.schema.sync_group.v1.request import SyncGroupRequest as SyncGroupV1
from kio.schema.sync_group.v2.request import SyncGroupRequest as SyncGroupV2
from kio.schema.sync_group.v3.request import SyncGroupRequest as SyncGroupV3
from kio.schema.sync_group.v4.request import SyncGroupRequest as SyncGroupV4
from kio.schema.sync_group.v5.request import SyncGroupRequest as SyncGroupV5
from kio.schema.txn_offset_commit.v0.request import TxnOffsetCommitRequest as TxnOffsetCommitV0
from kio.schema.txn_offset_commit.v1.request import TxnOffsetCommitRequest as TxnOffsetCommitV1
from kio.schema.txn_offset_commit.v2.request import TxnOffsetCommitRequest as TxnOffsetCommitV2
from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequest as TxnOffsetCommitV3
from kio.schema.txn_offset_commit.v4.request import TxnOffsetCommitRequest as TxnOffsetCommitV4
from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest as TxnOffsetCommitV5
from kio.schema.update_features.v0.request import UpdateFeaturesRequest as UpdateFeaturesV0
from kio.schema.update_features.v1.request import UpdateFeaturesRequest as UpdateFeaturesV1
from kio.schema.update_features.v2.request import UpdateFeaturesRequest as UpdateFeaturesV2

from .legacy_produce.v0 import ProduceRequest as ProduceV0
from .legacy_produce.v1 import ProduceRequest as ProduceV1
from .legacy_produce.v2 import ProduceRequest as ProduceV2

AlterConfigsRequest: TypeAlias = AlterConfigsV0 | AlterConfigsV1 | AlterConfigsV2
ApiVersionsRequest: TypeAlias = ApiVersionsV0 | ApiVersionsV1 | ApiVersionsV2 | ApiVersionsV3 | ApiVersionsV4
ConsumerGroupDescribeRequest: TypeAlias = ConsumerGroupDescribeV0 | ConsumerGroupDescribeV1
ConsumerGroupHeartbeatRequest: TypeAlias = ConsumerGroupHeartbeatV0 | ConsumerGroupHeartbeatV1
CreatePartitionsRequest: TypeAlias = (
    CreatePartitionsV0 | CreatePartitionsV1 | CreatePartitionsV2 | CreatePartitionsV3
)
CreateTopicsRequest: TypeAlias = (
    CreateTopicsV2 | CreateTopicsV3 | CreateTopicsV4 | CreateTopicsV5 | CreateTopicsV6 | CreateTopicsV7
)
DeleteGroupsRequest: TypeAlias = DeleteGroupsV0 | DeleteGroupsV1 | DeleteGroupsV2
DeleteRecordsRequest: TypeAlias = DeleteRecordsV0 | DeleteRecordsV1 | DeleteRecordsV2
DeleteTopicsRequest: TypeAlias = (
    DeleteTopicsV1 | DeleteTopicsV2 | DeleteTopicsV3 | DeleteTopicsV4 | DeleteTopicsV5 | DeleteTopicsV6
)
DescribeClusterRequest: TypeAlias = DescribeClusterV0 | DescribeClusterV1 | DescribeClusterV2
DescribeConfigsRequest: TypeAlias = (
    DescribeConfigsV1 | DescribeConfigsV2 | DescribeConfigsV3 | DescribeConfigsV4
)
DescribeGroupsRequest: TypeAlias = (
    DescribeGroupsV0
    | DescribeGroupsV1
    | DescribeGroupsV2
    | DescribeGroupsV3
    | DescribeGroupsV4
    | DescribeGroupsV5
    | DescribeGroupsV6
)
FetchRequest: TypeAlias = (
    FetchV4
    | FetchV5
    | FetchV6
    | FetchV7
    | FetchV8
    | FetchV9
    | FetchV10
    | FetchV11
    | FetchV12
    | FetchV13
    | FetchV14
    | FetchV15
    | FetchV16
    | FetchV17
    | FetchV18
)
FindCoordinatorRequest: TypeAlias = (
    FindCoordinatorV0
    | FindCoordinatorV1
    | FindCoordinatorV2
    | FindCoordinatorV3
    | FindCoordinatorV4
    | FindCoordinatorV5
    | FindCoordinatorV6
)
HeartbeatRequest: TypeAlias = HeartbeatV0 | HeartbeatV1 | HeartbeatV2 | HeartbeatV3 | HeartbeatV4
IncrementalAlterConfigsRequest: TypeAlias = IncrementalAlterConfigsV0 | IncrementalAlterConfigsV1
InitProducerIdRequest: TypeAlias = (
    InitProducerIdV0
    | InitProducerIdV1
    | InitProducerIdV2
    | InitProducerIdV3
    | InitProducerIdV4
    | InitProducerIdV5
    | InitProducerIdV6
)
JoinGroupRequest: TypeAlias = (
    JoinGroupV0
    | JoinGroupV1
    | JoinGroupV2
    | JoinGroupV3
    | JoinGroupV4
    | JoinGroupV5
    | JoinGroupV6
    | JoinGroupV7
    | JoinGroupV8
    | JoinGroupV9
)
LeaveGroupRequest: TypeAlias = (
    LeaveGroupV0 | LeaveGroupV1 | LeaveGroupV2 | LeaveGroupV3 | LeaveGroupV4 | LeaveGroupV5
)
ListGroupsRequest: TypeAlias = (
    ListGroupsV0 | ListGroupsV1 | ListGroupsV2 | ListGroupsV3 | ListGroupsV4 | ListGroupsV5
)
ListOffsetsRequest: TypeAlias = (
    ListOffsetsV1
    | ListOffsetsV2
    | ListOffsetsV3
    | ListOffsetsV4
    | ListOffsetsV5
    | ListOffsetsV6
    | ListOffsetsV7
    | ListOffsetsV8
    | ListOffsetsV9
    | ListOffsetsV10
    | ListOffsetsV11
)
MetadataRequest: TypeAlias = (
    MetadataV0
    | MetadataV1
    | MetadataV2
    | MetadataV3
    | MetadataV4
    | MetadataV5
    | MetadataV6
    | MetadataV7
    | MetadataV8
    | MetadataV9
    | MetadataV10
    | MetadataV11
    | MetadataV12
    | MetadataV13
)
OffsetCommitRequest: TypeAlias = (
    OffsetCommitV2
    | OffsetCommitV3
    | OffsetCommitV4
    | OffsetCommitV5
    | OffsetCommitV6
    | OffsetCommitV7
    | OffsetCommitV8
    | OffsetCommitV9
    | OffsetCommitV10
)
OffsetDeleteRequest: TypeAlias = OffsetDeleteV0
OffsetFetchRequest: TypeAlias = (
    OffsetFetchV1
    | OffsetFetchV2
    | OffsetFetchV3
    | OffsetFetchV4
    | OffsetFetchV5
    | OffsetFetchV6
    | OffsetFetchV7
    | OffsetFetchV8
    | OffsetFetchV9
    | OffsetFetchV10
)
OffsetForLeaderEpochRequest: TypeAlias = (
    OffsetForLeaderEpochV2 | OffsetForLeaderEpochV3 | OffsetForLeaderEpochV4
)
ProduceRequest: TypeAlias = (
    ProduceV0
    | ProduceV1
    | ProduceV2
    | ProduceV3
    | ProduceV4
    | ProduceV5
    | ProduceV6
    | ProduceV7
    | ProduceV8
    | ProduceV9
    | ProduceV10
    | ProduceV11
    | ProduceV12
    | ProduceV13
)
SyncGroupRequest: TypeAlias = (
    SyncGroupV0 | SyncGroupV1 | SyncGroupV2 | SyncGroupV3 | SyncGroupV4 | SyncGroupV5
)
AlterReplicaLogDirsRequest: TypeAlias = AlterReplicaLogDirsV1 | AlterReplicaLogDirsV2
DescribeLogDirsRequest: TypeAlias = (
    DescribeLogDirsV1 | DescribeLogDirsV2 | DescribeLogDirsV3 | DescribeLogDirsV4 | DescribeLogDirsV5
)
ElectLeadersRequest: TypeAlias = ElectLeadersV0 | ElectLeadersV1 | ElectLeadersV2
AlterPartitionReassignmentsRequest: TypeAlias = AlterPartitionReassignmentsV0 | AlterPartitionReassignmentsV1
ListPartitionReassignmentsRequest: TypeAlias = ListPartitionReassignmentsV0
UpdateFeaturesRequest: TypeAlias = UpdateFeaturesV0 | UpdateFeaturesV1 | UpdateFeaturesV2
DescribeProducersRequest: TypeAlias = DescribeProducersV0
CreateAclsRequest: TypeAlias = CreateAclsV1 | CreateAclsV2 | CreateAclsV3
DescribeAclsRequest: TypeAlias = DescribeAclsV1 | DescribeAclsV2 | DescribeAclsV3
DeleteAclsRequest: TypeAlias = DeleteAclsV1 | DeleteAclsV2 | DeleteAclsV3
DescribeClientQuotasRequest: TypeAlias = DescribeClientQuotasV0 | DescribeClientQuotasV1
AlterClientQuotasRequest: TypeAlias = AlterClientQuotasV0 | AlterClientQuotasV1
AddPartitionsToTxnRequest: TypeAlias = (
    AddPartitionsToTxnV0
    | AddPartitionsToTxnV1
    | AddPartitionsToTxnV2
    | AddPartitionsToTxnV3
    | AddPartitionsToTxnV4
    | AddPartitionsToTxnV5
)
AddOffsetsToTxnRequest: TypeAlias = (
    AddOffsetsToTxnV0 | AddOffsetsToTxnV1 | AddOffsetsToTxnV2 | AddOffsetsToTxnV3 | AddOffsetsToTxnV4
)
EndTxnRequest: TypeAlias = EndTxnV0 | EndTxnV1 | EndTxnV2 | EndTxnV3 | EndTxnV4 | EndTxnV5
TxnOffsetCommitRequest: TypeAlias = (
    TxnOffsetCommitV0
    | TxnOffsetCommitV1
    | TxnOffsetCommitV2
    | TxnOffsetCommitV3
    | TxnOffsetCommitV4
    | TxnOffsetCommitV5
)
DescribeTransactionsRequest: TypeAlias = DescribeTransactionsV0
ListTransactionsRequest: TypeAlias = ListTransactionsV0 | ListTransactionsV1 | ListTransactionsV2
ShareFetchRequest: TypeAlias = ShareFetchV1 | ShareFetchV2
ShareAcknowledgeRequest: TypeAlias = ShareAcknowledgeV1 | ShareAcknowledgeV2
ShareGroupHeartbeatRequest: TypeAlias = ShareGroupHeartbeatV1
ShareGroupDescribeRequest: TypeAlias = ShareGroupDescribeV1
StreamsGroupHeartbeatRequest: TypeAlias = StreamsGroupHeartbeatV0
StreamsGroupDescribeRequest: TypeAlias = StreamsGroupDescribeV0
DescribeShareGroupOffsetsRequest: TypeAlias = DescribeShareGroupOffsetsV0 | DescribeShareGroupOffsetsV1
AlterShareGroupOffsetsRequest: TypeAlias = AlterShareGroupOffsetsV0
DeleteShareGroupOffsetsRequest: TypeAlias = DeleteShareGroupOffsetsV0
SaslHandshakeRequest: TypeAlias = SaslHandshakeV0 | SaslHandshakeV1
SaslAuthenticateRequest: TypeAlias = SaslAuthenticateV0 | SaslAuthenticateV1 | SaslAuthenticateV2
DescribeUserScramCredentialsRequest: TypeAlias = DescribeUserScramCredentialsV0
AlterUserScramCredentialsRequest: TypeAlias = AlterUserScramCredentialsV0
